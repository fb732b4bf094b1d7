// Package duckcapi registers Go scalar functions with DuckDB through its C
// API, each answering a whole chunk from DuckDB's own vectors: no
// per-row conversion to driver.Value as duckdb-go's row API makes (on 500k
// URL-like strings a LIKE cost 183 ms through that API, 34 ms through this
// one, where DuckDB's own took 21). It serves the functions DHSI puts in
// place of DuckDB's where those run past every cancel (internal/duckpattern,
// internal/duckdistance).
//
// Invariants:
//
//	C1. A panic in a function becomes the statement's error: DuckDB calls
//	    it from its own threads, where an unrecovered panic ends the process.
//	C2. No string of a chunk is kept past the call: Chunk.String points into
//	    DuckDB's memory, valid until the function returns.
//	C3. Functions are registered only through a duckdb-go connection whose
//	    layout was checked (connectionOf); otherwise Register fails, and the
//	    server with it, rather than guess.
//	C4. DuckDB's C API hands a scalar function flat vectors; a registered
//	    function answers NULL for a row with a NULL argument (as DuckDB's
//	    own string functions do) before Func.Chunk sees the row.
//	C5. Nothing Prepare starts outlives it: an interrupt that reached the
//	    connection after Prepare returned would cancel the caller's next
//	    statement, or write into a connection the caller has since closed
//	    (a crash in ClientContext::Interrupt, CI at 989b6ce).
package duckcapi

/*
#include <stdint.h>
#include <stdlib.h>
void dhsiScalarFunc(void *info, void *input, void *output);
*/
import "C"

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"
	"unsafe"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// Type is an argument or result type.
type Type = mapping.Type

// The types functions take and give.
const (
	Varchar = mapping.TypeVarchar
	Boolean = mapping.TypeBoolean
	BigInt  = mapping.TypeBigInt
	Double  = mapping.TypeDouble
)

// Func is one scalar function.
type Func struct {
	Name   string
	Params []Type
	Result Type
	// Chunk answers the rows of in that have no NULL argument (C4) into
	// out; an error fails the statement.
	Chunk func(in *Chunk, out *Output) error
}

// registered are the functions the callback serves, by the index each
// one's extra info holds.
var (
	registeredMu sync.Mutex
	registered   []Func
)

// ErrLayout is returned by Register when duckdb-go's connection is not the
// one this package was written against (C3).
var ErrLayout = errors.New("duckcapi: duckdb-go's connection layout is not the one expected")

// Register registers fns on the database of conn, for every connection; a
// function of a built-in's name replaces the built-in.
func Register(conn *sql.Conn, fns ...Func) error {
	return conn.Raw(func(dc any) error {
		mc, err := connectionOf(dc)
		if err != nil {
			return err
		}
		for _, f := range fns {
			if len(f.Params) > maxParams {
				return fmt.Errorf("duckcapi: %s takes %d arguments, at most %d", f.Name, len(f.Params), maxParams)
			}
			registeredMu.Lock()
			idx := len(registered)
			registered = append(registered, f)
			registeredMu.Unlock()
			fn := mapping.CreateScalarFunction()
			mapping.ScalarFunctionSetName(fn, f.Name)
			for _, p := range f.Params {
				t := mapping.CreateLogicalType(p)
				mapping.ScalarFunctionAddParameter(fn, t)
				mapping.DestroyLogicalType(&t)
			}
			t := mapping.CreateLogicalType(f.Result)
			mapping.ScalarFunctionSetReturnType(fn, t)
			mapping.DestroyLogicalType(&t)
			// the index in C memory, which DuckDB keeps and frees
			extra := C.malloc(8)
			*(*int64)(extra) = int64(idx)
			mapping.ScalarFunctionSetExtraInfo(fn, extra, unsafe.Pointer(C.free))
			mapping.ScalarFunctionSetFunction(fn, unsafe.Pointer(C.dhsiScalarFunc))
			state := mapping.RegisterScalarFunction(mc, fn)
			mapping.DestroyScalarFunction(&fn)
			if state == mapping.StateError {
				return fmt.Errorf("register %s: DuckDB refused it", f.Name)
			}
		}
		return nil
	})
}

var layoutOK = sync.OnceValue(func() bool {
	t := reflect.TypeOf(duckdb.Conn{})
	if t.NumField() == 0 {
		return false
	}
	f := t.Field(0)
	return f.Name == "conn" && f.Offset == 0 && f.Type == reflect.TypeOf(mapping.Connection{})
})

// connectionOf is the C API connection of a duckdb-go connection: its
// first field, checked by reflection (C3).
func connectionOf(dc any) (mapping.Connection, error) {
	c, ok := dc.(*duckdb.Conn)
	if !ok || !layoutOK() {
		return mapping.Connection{}, ErrLayout
	}
	return *(*mapping.Connection)(unsafe.Pointer(c)), nil
}

//export dhsiScalarFunc
func dhsiScalarFunc(info, input, output unsafe.Pointer) {
	fi := mapping.FunctionInfo{Ptr: info}
	registeredMu.Lock()
	f := registered[*(*int64)(mapping.ScalarFunctionGetExtraInfo(fi))]
	registeredMu.Unlock()
	defer func() { // C1
		if r := recover(); r != nil {
			mapping.ScalarFunctionSetError(fi, fmt.Sprintf("%s: internal error: %v", f.Name, r))
		}
	}()
	if err := run(f, mapping.DataChunk{Ptr: input}, mapping.Vector{Ptr: output}); err != nil {
		mapping.ScalarFunctionSetError(fi, err.Error())
	}
}

const maxParams = 4

func run(f Func, chunk mapping.DataChunk, output mapping.Vector) error {
	in := &Chunk{n: int(mapping.DataChunkGetSize(chunk)), cols: len(f.Params)}
	if in.n == 0 {
		return nil
	}
	for i := 0; i < in.cols; i++ {
		v := mapping.DataChunkGetVector(chunk, mapping.IdxT(i))
		in.data[i], in.valid[i] = mapping.VectorGetData(v), mapping.VectorGetValidity(v)
	}
	out := &Output{vec: output, n: in.n, data: mapping.VectorGetData(output)}
	for row := 0; row < in.n; row++ { // C4
		for i := 0; i < in.cols; i++ {
			if !in.valid1(i, row) {
				out.SetNull(row)
				break
			}
		}
	}
	in.nulls = out.valid // nil: no row is NULL
	return f.Chunk(in, out)
}

// Chunk is a function's input: flat vectors (C4).
type Chunk struct {
	n, cols     int
	data, valid [maxParams]unsafe.Pointer
	nulls       []uint64 // the output's validity, once a row is NULL
}

// Rows is how many rows the chunk holds.
func (c *Chunk) Rows() int { return c.n }

// Skip reports whether row has a NULL argument: its answer is NULL.
func (c *Chunk) Skip(row int) bool {
	return c.nulls != nil && c.nulls[row/64]&(1<<(row%64)) == 0
}

func (c *Chunk) valid1(col, row int) bool {
	mask := c.valid[col]
	if mask == nil {
		return true
	}
	return *(*uint64)(unsafe.Add(mask, 8*(row/64)))&(1<<(row%64)) != 0
}

// String is row's value of VARCHAR argument col: duckdb_string_t, 16
// bytes, a uint32 length, then up to 12 bytes inline or a 4-byte prefix
// and a pointer. It points into DuckDB's memory (C2).
func (c *Chunk) String(col, row int) string {
	e := unsafe.Add(c.data[col], 16*row)
	n := int(*(*uint32)(e))
	if n == 0 {
		return ""
	}
	if n <= 12 {
		return unsafe.String((*byte)(unsafe.Add(e, 4)), n)
	}
	return unsafe.String(*(**byte)(unsafe.Add(e, 8)), n)
}

// Output is a function's result vector.
type Output struct {
	vec   mapping.Vector
	n     int
	data  unsafe.Pointer
	valid []uint64
}

// SetNull makes row's answer NULL.
func (o *Output) SetNull(row int) {
	if o.valid == nil {
		mapping.VectorEnsureValidityWritable(o.vec)
		o.valid = unsafe.Slice((*uint64)(mapping.VectorGetValidity(o.vec)), (o.n+63)/64)
	}
	o.valid[row/64] &^= 1 << (row % 64)
}

// Bools is a BOOLEAN result's values.
func (o *Output) Bools() []bool { return unsafe.Slice((*bool)(o.data), o.n) }

// Int64s is a BIGINT result's values.
func (o *Output) Int64s() []int64 { return unsafe.Slice((*int64)(o.data), o.n) }

// Float64s is a DOUBLE result's values.
func (o *Output) Float64s() []float64 { return unsafe.Slice((*float64)(o.data), o.n) }

// Prepare prepares query on c with ctx and interrupts DuckDB while it does
// once until ends. duckdb-go's PrepareContext looks at ctx only before it
// calls DuckDB, whose binder then runs unbounded: a statement whose macros
// expand a million-fold bound for minutes past statement_timeout and
// cancels. DuckDB's binder does stop when interrupted (measured: nullif
// nested 17 deep, interrupted after 1 s, ended after 3 s). ctx is kept
// apart from until because duckdb-go hands the context of the prepare to
// the statement's Go functions when they run: it must outlive the call.
func Prepare(ctx, until context.Context, c *duckdb.Conn, query string) (driver.Stmt, error) {
	mc, err := connectionOf(c)
	if err != nil {
		return nil, err
	}
	finished := make(chan struct{})
	interrupterEnded := make(chan struct{})
	stop := context.AfterFunc(until, func() {
		defer close(interrupterEnded)
		// again until the call returns: an interrupt that lands before
		// DuckDB begins the statement is forgotten when it does
		for {
			select {
			case <-finished:
				return
			default:
			}
			mapping.Interrupt(mc)
			select {
			case <-finished:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	st, err := c.PrepareContext(ctx, query)
	close(finished)
	if !stop() {
		// C5: the interrupter started; it ends before c runs anything else
		// or is closed
		<-interrupterEnded
	}
	return st, err
}
