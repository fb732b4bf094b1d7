// Package duckdistance puts bounded edit distances in place of DuckDB
// 1.5.5's levenshtein, editdist3 and damerau_levenshtein, through its C API
// (internal/duckcapi).
//
// Why: DuckDB computes them in time len(a) × len(b), and memory as much
// for damerau_levenshtein, in one call that no cancel reaches: a reader's
// levenshtein of two 100,000-character strings ran on past
// statement_timeout (docs/security.md). These give DuckDB's answers (byte
// by byte, the distance to an empty string its length; checked against
// DuckDB's own by this package's tests) and refuse a pair past MaxCells.
package duckdistance

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/dhsi/dhsi/internal/duckcapi"
)

// MaxCells bounds levenshtein: len(a) × len(b), about a tenth of a second
// of one core (two strings of 8,000 bytes).
const MaxCells = 1 << 26

// MaxChunkCells bounds the pairs of one chunk (up to 2,048 rows): DuckDB
// looks for a cancel only between chunks, and 200 rows each just under
// MaxCells ran 89 s past a 2 s timeout. About a second of a core.
const MaxChunkCells = 2 * MaxCells

// MaxDamerauCells bounds damerau_levenshtein, whose table is len(a) ×
// len(b) cells: 32 MiB.
const MaxDamerauCells = 1 << 23

// ErrTooLarge is returned for a pair past the bound.
var ErrTooLarge = errors.New("strings too long for an edit distance")

// Register replaces the functions on the database of conn, for every
// connection.
func Register(conn *sql.Conn) error {
	two := []duckcapi.Type{duckcapi.Varchar, duckcapi.Varchar}
	fn := func(name string, dist func(a, b string) (int64, error)) duckcapi.Func {
		return duckcapi.Func{Name: name, Params: two, Result: duckcapi.BigInt,
			Chunk: func(in *duckcapi.Chunk, out *duckcapi.Output) error {
				res := out.Int64s()
				var cells uint64
				for row := 0; row < in.Rows(); row++ {
					if in.Skip(row) {
						continue
					}
					a, b := in.String(0, row), in.String(1, row)
					if cells += uint64(len(a)) * uint64(len(b)); cells > MaxChunkCells {
						return fmt.Errorf("%s: %w: one chunk of %d rows past %d byte pairs", name, ErrTooLarge, in.Rows(), uint64(MaxChunkCells))
					}
					d, err := dist(a, b)
					if err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					res[row] = d
				}
				return nil
			}}
	}
	return duckcapi.Register(conn,
		fn("levenshtein", Levenshtein),
		fn("editdist3", Levenshtein),
		fn("damerau_levenshtein", DamerauLevenshtein))
}

func tooLarge(a, b string, max int) error {
	if uint64(len(a))*uint64(len(b)) > uint64(max) {
		return fmt.Errorf("%w: %d and %d bytes (at most %d byte pairs)", ErrTooLarge, len(a), len(b), max)
	}
	return nil
}

// Levenshtein is the edit distance of a and b in bytes: insertions,
// deletions and substitutions, each 1.
func Levenshtein(a, b string) (int64, error) {
	if err := tooLarge(a, b, MaxCells); err != nil {
		return 0, err
	}
	if len(a) < len(b) {
		a, b = b, a // the row is the shorter
	}
	if len(b) == 0 {
		return int64(len(a)), nil
	}
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0] // d[i-1][j-1]
		row[0] = i
		ai := a[i-1]
		for j := 1; j <= len(b); j++ {
			up := row[j] // d[i-1][j]
			cost := 1
			if ai == b[j-1] {
				cost = 0
			}
			row[j] = min(up+1, row[j-1]+1, diag+cost)
			diag = up
		}
	}
	return int64(row[len(b)]), nil
}

// DamerauLevenshtein is the edit distance of a and b in bytes where also a
// transposition of two bytes costs 1, even with edits between them
// (Lowrance and Wagner's, as DuckDB's).
func DamerauLevenshtein(a, b string) (int64, error) {
	if err := tooLarge(a, b, MaxDamerauCells); err != nil {
		return 0, err
	}
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return int64(n + m), nil
	}
	inf := int32(n + m)
	w := m + 2
	d := make([]int32, (n+2)*w)
	at := func(i, j int) *int32 { return &d[i*w+j] }
	*at(0, 0) = inf
	for i := 0; i <= n; i++ {
		*at(i+1, 0), *at(i+1, 1) = inf, int32(i)
	}
	for j := 0; j <= m; j++ {
		*at(0, j+1), *at(1, j+1) = inf, int32(j)
	}
	var last [256]int // the last row of a holding each byte
	for i := 1; i <= n; i++ {
		lastCol := 0 // the last column of b, in this row, where a[i-1] matched
		for j := 1; j <= m; j++ {
			k, l := last[b[j-1]], lastCol
			cost := int32(1)
			if a[i-1] == b[j-1] {
				cost, lastCol = 0, j
			}
			*at(i+1, j+1) = min(
				*at(i, j)+cost,
				*at(i+1, j)+1,
				*at(i, j+1)+1,
				*at(k, l)+int32(i-k-1)+1+int32(j-l-1))
		}
		last[a[i-1]] = i
	}
	return int64(*at(n+1, m+1)), nil
}
