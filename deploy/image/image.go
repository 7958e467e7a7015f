// Command image writes kiln's container image as an OCI image layout in a
// tar file (an "oci-archive"), from a release binary alone: no Docker
// daemon, no registry, no base image to download, so a release job or a
// laptop without network builds it, and the same binary, version and time
// give the same bytes. GoReleaser runs it after each kiln build; push the
// result with `skopeo copy oci-archive:FILE docker://REPO:TAG` or load it
// with `podman load -i FILE`.
//
// The image is one layer: the static kiln binary, the Mozilla/NSS root
// certificates (from golang.org/x/crypto/x509roots, pinned in go.sum), a
// non-root user 65532 with its home, /tmp and /var/lib/kiln for state.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Where things live in the image; the Helm chart mounts its volumes on
// stateDir and /tmp and its config on /etc/kiln.
const (
	binPath  = "/usr/local/bin/kiln"
	caPath   = "/etc/ssl/certs/ca-certificates.crt"
	stateDir = "/var/lib/kiln"
	homeDir  = "/home/nonroot"
	uid      = 65532
)

// Spec is what varies between builds of the image.
type Spec struct {
	Binary  []byte    // the static linux kiln binary
	Arch    string    // GOARCH: amd64, arm64
	Version string    // image version label and ref name
	Created time.Time // commit time: every file and the config carry it
	Source  string    // org.opencontainers.image.source
}

// file is one entry of the image's layer.
type file struct {
	name string
	mode int64
	uid  int
	data []byte
	dir  bool
}

func (s Spec) files() ([]file, error) {
	ca, err := caBundle()
	if err != nil {
		return nil, err
	}
	dirs := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "home/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(homeDir, "/") + "/", mode: 0o700, uid: uid, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: "var/", mode: 0o755, dir: true},
		{name: "var/lib/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(stateDir, "/") + "/", mode: 0o700, uid: uid, dir: true},
	}
	return append(dirs,
		file{name: strings.TrimPrefix(caPath, "/"), mode: 0o644, data: ca},
		file{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", uid, uid, homeDir)},
		file{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", uid)},
		file{name: strings.TrimPrefix(binPath, "/"), mode: 0o755, data: s.Binary},
	), nil
}

// caBundle is the NSS roots as PEM. Roots NSS trusts only with a
// distrust-after date cannot carry that limit in a PEM file, so they are
// left out rather than trusted without it.
func caBundle() ([]byte, error) {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
	}
	if b.Len() == 0 {
		return nil, fmt.Errorf("the pinned root certificate bundle is empty")
	}
	return b.Bytes(), nil
}

// layer returns the gzip'd tar of files and the digest of the plain tar
// (the config's diff_id).
func layer(files []file, mtime time.Time) (gz []byte, diffID string, err error) {
	var plain bytes.Buffer
	tw := tar.NewWriter(&plain)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime,
			Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(plain.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return out.Bytes(), digest(plain.Bytes()), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// The OCI media types and documents this writer needs (image-spec v1.1).
const (
	mtIndex    = "application/vnd.oci.image.index.v1+json"
	mtManifest = "application/vnd.oci.image.manifest.v1+json"
	mtConfig   = "application/vnd.oci.image.config.v1+json"
	mtLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// Config is the part of the image config a runtime reads to start kiln.
type Config struct {
	User       string            `json:"User"`
	Env        []string          `json:"Env"`
	Entrypoint []string          `json:"Entrypoint"`
	Cmd        []string          `json:"Cmd"`
	WorkingDir string            `json:"WorkingDir"`
	Labels     map[string]string `json:"Labels"`
}

type imageConfig struct {
	Created      string `json:"created"`
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       Config `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []map[string]string `json:"history"`
}

// Layout builds the image and returns the files of its OCI image layout,
// path → content.
func (s Spec) Layout() (map[string][]byte, error) {
	switch {
	case len(s.Binary) == 0:
		return nil, fmt.Errorf("no kiln binary given")
	case s.Arch == "":
		return nil, fmt.Errorf("no architecture given")
	case s.Version == "":
		return nil, fmt.Errorf("no version given")
	}
	files, err := s.files()
	if err != nil {
		return nil, err
	}
	created := s.Created.UTC()
	gz, diffID, err := layer(files, created)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.version": s.Version,
		"org.opencontainers.image.created": created.Format(time.RFC3339),
		"org.opencontainers.image.title":   "kiln",
	}
	if s.Source != "" {
		labels["org.opencontainers.image.source"] = s.Source
	}
	cfg := imageConfig{Created: created.Format(time.RFC3339), Architecture: s.Arch, OS: "linux",
		Config: Config{
			User: fmt.Sprintf("%d:%d", uid, uid),
			Env: []string{"PATH=/usr/local/bin", "HOME=" + homeDir, "SSL_CERT_FILE=" + caPath,
				"TMPDIR=/tmp"},
			Entrypoint: []string{binPath},
			Cmd:        []string{"serve", "--config", "/etc/kiln/kiln.yaml", "--http", "0.0.0.0:8080"},
			WorkingDir: stateDir,
			Labels:     labels,
		},
		History: []map[string]string{{"created": created.Format(time.RFC3339), "created_by": "kiln deploy/image " + s.Version}},
	}
	cfg.RootFS.Type, cfg.RootFS.DiffIDs = "layers", []string{diffID}
	out := map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`)}
	blob := func(b []byte) string {
		d := digest(b)
		out["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")] = b
		return d
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	manifest := map[string]any{
		"schemaVersion": 2,
		"mediaType":     mtManifest,
		"config":        descriptor{MediaType: mtConfig, Digest: blob(cfgJSON), Size: len(cfgJSON)},
		"layers":        []descriptor{{MediaType: mtLayer, Digest: blob(gz), Size: len(gz)}},
		"annotations":   labels,
	}
	manJSON, err := json.Marshal(manifest)
	if err != nil {
		return nil, err
	}
	index := map[string]any{
		"schemaVersion": 2,
		"mediaType":     mtIndex,
		"manifests": []descriptor{{MediaType: mtManifest, Digest: blob(manJSON), Size: len(manJSON),
			Platform:    &platform{Architecture: s.Arch, OS: "linux"},
			Annotations: map[string]string{"org.opencontainers.image.ref.name": s.Version}}},
	}
	if out["index.json"], err = json.Marshal(index); err != nil {
		return nil, err
	}
	return out, nil
}

// WriteArchive writes the layout as a tar, entries sorted and stamped with
// created, so equal inputs give equal bytes.
func WriteArchive(w io.Writer, layout map[string][]byte, created time.Time) error {
	names := make([]string, 0, len(layout))
	dirs := map[string]bool{}
	for n := range layout {
		names = append(names, n)
		for d := path.Dir(n); d != "."; d = path.Dir(d) {
			dirs[d+"/"] = true
		}
	}
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, ModTime: created.UTC(), Typeflag: tar.TypeReg, Size: int64(len(layout[n]))}
		if strings.HasSuffix(n, "/") {
			h.Mode, h.Typeflag, h.Size = 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(layout[n]); err != nil {
			return err
		}
	}
	return tw.Close()
}
