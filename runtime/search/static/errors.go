package static

import "errors"

// ErrFormat reports a word-vector file or a frozen table that does not
// decode.
var ErrFormat = errors.New("static vectors: bad format")
