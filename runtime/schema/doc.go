// Package schema validates tool arguments against the input schema a
// backend recorded, before kiln dispatches anything. It uses jsonschema v6
// with ECMAScript regular expressions (real backends publish patterns such
// as (?!…) that Go's regexp refuses) and with every $ref loader disabled, so
// a hostile schema cannot read local files or reach the network.
package schema
