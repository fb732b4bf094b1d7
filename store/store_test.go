package store

import (
	"errors"
	"testing"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
		ok   bool
	}{
		{"a single segment is valid", "a", true},
		{"slash-separated segments are valid", "a/b/c.parquet", true},
		{"dots inside a segment are valid", "a/..b/c..", true},
		{"UTF-8 is valid", "日本/é", true},
		{"the empty key is invalid", "", false},
		{"a leading slash is invalid", "/a", false},
		{"a trailing slash is invalid", "a/", false},
		{"an empty segment is invalid", "a//b", false},
		{"a dot segment is invalid", "a/./b", false},
		{"a dot-dot segment is invalid", "a/../b", false},
		{"a NUL byte is invalid", "a\x00b", false},
		{"invalid UTF-8 is invalid", "a/\xff", false},
	} {
		err := ValidateKey(tc.key)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidKey)) {
			t.Errorf("%s: ValidateKey(%q) = %v", tc.name, tc.key, err)
		}
	}
}

func TestCondValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cond Cond
		op   string
		ok   bool
	}{
		{"the zero Cond is an unconditional put", Cond{}, "put", true},
		{"IfMatch is a put condition", Cond{IfMatch: "e"}, "put", true},
		{"IfNoneMatch is a put condition", Cond{IfNoneMatch: true}, "put", true},
		{"IfMatch is a delete condition", Cond{IfMatch: "e"}, "delete", true},
		{"IfNoneMatch is not a delete condition", Cond{IfNoneMatch: true}, "delete", false},
		{"IfMatch and IfNoneMatch exclude each other", Cond{IfMatch: "e", IfNoneMatch: true}, "put", false},
	} {
		if err := tc.cond.Validate(tc.op); tc.ok != (err == nil) {
			t.Errorf("%s: Validate(%q) = %v", tc.name, tc.op, err)
		}
	}
}
