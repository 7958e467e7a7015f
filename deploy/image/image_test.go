package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// staticBinary builds a small static Go program standing in for kiln
// (building kiln here would double the package's test time; the release
// snapshot runs this tool on the real binaries).
func staticBinary(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	src := "package main\nimport (\"fmt\"; \"os\")\nfunc main() { fmt.Println(\"kiln in a box\", os.Getenv(\"SSL_CERT_FILE\")) }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module box\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", "box", ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "box"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func archive(t *testing.T, s Spec) []byte {
	t.Helper()
	layout, err := s.Layout()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteArchive(&b, layout, s.Created); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// untar reads a tar into name → entry.
func untar(t *testing.T, r io.Reader) map[string]*entry {
	t.Helper()
	out := map[string]*entry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = &entry{h, data}
	}
}

type entry struct {
	h    *tar.Header
	data []byte
}

// blob reads a blob the way a runtime does: by digest, checking it.
func blob(t *testing.T, files map[string]*entry, d descriptor) []byte {
	t.Helper()
	e, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
	if !ok {
		t.Fatalf("blob %s missing", d.Digest)
	}
	if digest(e.data) != d.Digest || len(e.data) != d.Size {
		t.Fatalf("blob %s: digest %s size %d, descriptor says size %d", d.Digest, digest(e.data), len(e.data), d.Size)
	}
	return e.data
}

func TestImageIsReproducibleAndRunnable(t *testing.T) {
	created := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	spec := Spec{Binary: staticBinary(t), Arch: "amd64", Version: "1.2.3", Created: created, Source: "https://example.test/kiln"}
	first := archive(t, spec)
	if again := archive(t, spec); !bytes.Equal(first, again) {
		t.Fatal("two builds from the same inputs differ")
	}
	files := untar(t, bytes.NewReader(first))
	for name, e := range files {
		if !e.h.ModTime.Equal(created) {
			t.Errorf("%s stamped %v, want the creation time", name, e.h.ModTime)
		}
	}
	if e := files["oci-layout"]; e == nil || !strings.Contains(string(e.data), `"imageLayoutVersion":"1.0.0"`) {
		t.Fatalf("oci-layout missing or wrong")
	}
	var index struct {
		MediaType string
		Manifests []descriptor
	}
	if err := json.Unmarshal(files["index.json"].data, &index); err != nil {
		t.Fatal(err)
	}
	if index.MediaType != mtIndex || len(index.Manifests) != 1 || index.Manifests[0].Platform.Architecture != "amd64" ||
		index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1.2.3" {
		t.Fatalf("index = %+v", index)
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(blob(t, files, index.Manifests[0]), &manifest); err != nil {
		t.Fatal(err)
	}
	var cfg imageConfig
	if err := json.Unmarshal(blob(t, files, manifest.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || cfg.Config.Entrypoint[0] != binPath || cfg.OS != "linux" || cfg.Architecture != "amd64" ||
		cfg.Created != "2026-11-25T12:00:00Z" || cfg.Config.Labels["org.opencontainers.image.source"] != "https://example.test/kiln" {
		t.Fatalf("config = %+v", cfg)
	}
	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, manifest.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if digest(plain) != cfg.RootFS.DiffIDs[0] {
		t.Fatalf("diff_id %s, the layer's tar hashes to %s", cfg.RootFS.DiffIDs[0], digest(plain))
	}
	root := untar(t, bytes.NewReader(plain))
	bin := root[strings.TrimPrefix(binPath, "/")]
	if bin == nil || bin.h.Mode != 0o755 || bin.h.Uid != 0 {
		t.Fatalf("binary entry = %+v", bin)
	}
	for _, d := range []string{"var/lib/kiln/", "home/nonroot/"} {
		if e := root[d]; e == nil || e.h.Uid != uid || e.h.Typeflag != tar.TypeDir {
			t.Errorf("%s: %+v, want a directory owned by %d", d, e, uid)
		}
	}
	if e := root["tmp/"]; e == nil || e.h.Mode != 0o1777 {
		t.Errorf("tmp/ = %+v, want mode 1777", e)
	}
	if !strings.Contains(string(root["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("passwd lacks the non-root user:\n%s", root["etc/passwd"].data)
	}
	// The CA bundle is a PEM file crypto/x509 (and every TLS stack) reads.
	pool, rest, n := x509.NewCertPool(), root[strings.TrimPrefix(caPath, "/")].data, 0
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		pool.AddCert(c)
		n++
	}
	if n < 100 || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("CA bundle: %d certificates, %d trailing bytes", n, len(rest))
	}

	// The binary as the image holds it runs, with the image's environment.
	exe := filepath.Join(t.TempDir(), "kiln")
	if err := os.WriteFile(exe, bin.data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = cfg.Config.Env
	out, err := cmd.Output()
	if err != nil || string(out) != "kiln in a box "+caPath+"\n" {
		t.Fatalf("the image's binary: %v, %q", err, out)
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Arch: "amd64", Version: "1"}, "no kiln binary"},
		{Spec{Binary: []byte{1}, Version: "1"}, "no architecture"},
		{Spec{Binary: []byte{1}, Arch: "amd64"}, "no version"},
	} {
		if _, err := c.spec.Layout(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Layout(%+v) = %v, want %q", c.spec, err, c.want)
		}
	}
	if err := run([]string{"--binary", "x", "--out", "y", "--created", "yesterday"}); err == nil || !strings.Contains(err.Error(), "Unix seconds or RFC 3339") {
		t.Errorf("bad --created: %v", err)
	}
	for in, want := range map[string]string{
		"1764072000":           "2025-11-25T12:00:00Z",
		"2026-11-25T13:00:00Z": "2026-11-25T13:00:00Z",
		"-62135596800":         "1970-01-01T00:00:00Z",
	} {
		if got, err := parseTime(in); err != nil || got.Format(time.RFC3339) != want {
			t.Errorf("parseTime(%s) = %v, %v; want %s", in, got, err, want)
		}
	}
	out := filepath.Join(t.TempDir(), "x.oci.tar")
	if err := run([]string{"--binary", "/nonexistent/kiln", "--arch", "amd64", "--version", "1", "--created", "0", "--out", out}); err == nil {
		t.Error("a missing binary was accepted")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s behind", out)
	}
}
