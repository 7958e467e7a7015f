// Package goedit edits Go source as a syntax tree for the workspace's
// structural tools (edit_function_body, insert_after_method,
// change_function_signature). It works on bytes handed to it and returns
// bytes: reading and writing files, containment and the post-edit check
// stay with the workspace, whose resolver every path goes through.
//
// Body and insertion edits splice new text between the positions go/ast
// reports and gofmt the result, so every byte outside the edited body
// (doc comments, comments between declarations, inline comments) stays
// as it was in a gofmt-formatted file. Signature changes rewrite call
// sites with github.com/dave/dst, which keeps the comments attached to
// the arguments it moves. Call sites are found with go/types over the
// module's own source only: nothing outside the module (the standard
// library, dependencies) is loaded, so a call whose receiver's type
// comes from outside cannot be told apart from a call to the target and
// makes the change refuse as ambiguous.
package goedit
