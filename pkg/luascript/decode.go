package luascript

import "fmt"

// Reply reads a script's reply field by field, for the decode methods that
// cmd/luacontract generates: an array, or a single value as an array of
// one. A field past a shorter reply reads as its zero value; a longer reply
// than the contract's, or a value of another type, is the error Err
// returns (the first one met).
type Reply struct {
	vals   []any
	scalar any
	single bool
	typ    string
	err    error
}

// Start begins reading reply as the Go type typ ("authReply") of fields
// fields.
func (r *Reply) Start(reply any, typ string, fields int) {
	*r = Reply{typ: typ}
	vals, ok := reply.([]any)
	if !ok {
		r.scalar, r.single = reply, true
		return
	}
	r.vals = vals
	if len(vals) > fields {
		r.err = fmt.Errorf("reply of %d values, want at most %d (%s)", len(vals), fields, typ)
	}
}

func (r *Reply) value(i int) (any, bool) {
	if r.err != nil {
		return nil, false
	}
	if r.single {
		return r.scalar, i == 0
	}
	if i < len(r.vals) {
		return r.vals[i], true
	}
	return nil, false
}

// Int reads field i, named field, an integer.
func (r *Reply) Int(i int, field string) int64 {
	v, ok := r.value(i)
	if !ok {
		return 0
	}
	n, ok := v.(int64)
	if !ok {
		r.err = fmt.Errorf("reply value %d (%s.%s): %T, want an integer", i+1, r.typ, field, v)
	}
	return n
}

// Bool reads field i, an integer: 1 is true.
func (r *Reply) Bool(i int, field string) bool { return r.Int(i, field) == 1 }

// String reads field i, a string; nil (a missing hash field) is "".
func (r *Reply) String(i int, field string) string {
	v, ok := r.value(i)
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.err = fmt.Errorf("reply value %d (%s.%s): %T, want a string", i+1, r.typ, field, v)
	}
	return s
}

// Err is the first error met.
func (r *Reply) Err() error { return r.err }
