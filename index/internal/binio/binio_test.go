package binio

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/dhsi/dhsi/index/internal/indextest"
)

func TestSinkPatchesTheHeader(t *testing.T) {
	var f indextest.File
	var b bytes.Buffer
	cases := []struct {
		name      string
		dst       io.Writer
		streaming bool
		bytes     func() []byte
	}{
		{"a WriterAt destination streams and is patched in place", &f, true, func() []byte { return f.B }},
		{"a plain Writer destination is buffered and written once", &b, false, func() []byte { return b.Bytes() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewSink(c.dst)
			if s.Streaming() != c.streaming {
				t.Fatalf("Streaming = %v", s.Streaming())
			}
			s.Write([]byte("....body"))
			big := bytes.Repeat([]byte{'x'}, 300<<10) // more than the stream buffer
			s.Write(big)
			if err := s.Finish([]byte("HEAD")); err != nil {
				t.Fatal(err)
			}
			want := append([]byte("HEADbody"), big...)
			if !bytes.Equal(c.bytes(), want) {
				t.Fatal("file differs")
			}
		})
	}
}

func TestReadAtRejectsShortReads(t *testing.T) {
	r := bytes.NewReader([]byte("abc"))
	if b, err := ReadAt(r, 1, 2); err != nil || string(b) != "bc" {
		t.Fatalf("a read ending at EOF: %q, %v", b, err)
	}
	if _, err := ReadAt(r, 2, 2); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a read past EOF: err = %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := ReadAt(r, -1, 1); err == nil {
		t.Fatal("a negative offset was accepted")
	}
}
