package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/kilnmcp/kiln/runtime/atomicfile"
)

const usage = `usage: go run ./deploy/image --binary PATH --arch GOARCH --version V --created TIME --out FILE.oci.tar

Writes kiln's container image (OCI image layout in a tar) from a static
linux kiln binary. TIME is Unix seconds (GoReleaser's .CommitTimestamp) or
RFC 3339. Push it with: skopeo copy oci-archive:FILE docker://REPO:TAG
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage) }
	bin := fs.String("binary", "", "the kiln binary (static, linux)")
	arch := fs.String("arch", "", "its GOARCH")
	version := fs.String("version", "", "the release version")
	created := fs.String("created", "", "creation time: Unix seconds or RFC 3339")
	source := fs.String("source", "https://github.com/kilnmcp/kiln", "org.opencontainers.image.source")
	out := fs.String("out", "", "the .oci.tar to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || *out == "" || *created == "" {
		return fmt.Errorf("--binary, --created and --out are required\n%s", usage)
	}
	when, err := parseTime(*created)
	if err != nil {
		return fmt.Errorf("--created %q: %w", *created, err)
	}
	data, err := os.ReadFile(*bin)
	if err != nil {
		return err
	}
	spec := Spec{Binary: data, Arch: *arch, Version: *version, Created: when, Source: *source}
	layout, err := spec.Layout()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := WriteArchive(&b, layout, when); err != nil {
		return err
	}
	return atomicfile.Write(*out, b.Bytes())
}

// parseTime reads --created. A time before 1970 (GoReleaser's commit time
// when it finds no git history) becomes the Unix epoch, which every tar
// reader and registry accepts.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if n, nerr := strconv.ParseInt(s, 10, 64); nerr == nil {
		t, err = time.Unix(n, 0), nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("want Unix seconds or RFC 3339 (2006-01-02T15:04:05Z)")
	}
	if t.Before(time.Unix(0, 0)) {
		t = time.Unix(0, 0)
	}
	return t.UTC(), nil
}
