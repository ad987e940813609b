package jsonmembers

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// testMax is the member limit of the tests (pkg/dpop and pkg/accesstoken use 32).
const testMax = 32

// strictReference is Strict written the plain way, with
// json.Decoder's tokens: the scanner must agree
// with it on every input.
func strictReference(obj []byte, exact []string) bool {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	var seen []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		name, ok := tok.(string)
		if !ok || len(seen) == testMax {
			return false
		}
		for _, s := range seen {
			if strings.EqualFold(s, name) {
				return false
			}
		}
		for _, e := range exact {
			if name != e && strings.EqualFold(name, e) {
				return false
			}
		}
		seen = append(seen, name)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	if _, err := dec.Token(); err != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF // nothing after the object
}

var strictCases = []struct {
	in   string
	want bool
}{
	{`{}`, true},
	{` { } `, true},
	{`{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","x":"a","y":"b"}}`, true},
	{"{\n\t\"a\" :\r\n[1, {\"b\": [\"}\", \"]\"]}, true, null, -1.5e3] , \"c\":\"\\\"x\\\\\"}", true},
	{`{"a":{"A":1,"a":2}}`, true}, // nested names are not the object's
	{`{"a":1,"a":2}`, false},
	{`{"a":1,"A":2}`, false},
	{`{"TYP":"dpop+jwt"}`, false},
	{`{"\u0074yp":"x","typ":"y"}`, false},
	{`{"\u0054YP":"x"}`, false},
	{`{"K":1,"\u212a":2}`, false}, // KELVIN SIGN folds to k
	{`{"alg":"ES256"} {}`, false},
	{`{}A`, false},
	{`{"alg":"ES256"`, false},
	{`["alg"]`, false},
	{`"alg"`, false},
	{``, false},
	{`{"a":1,}`, false},
	{`{"a" 1}`, false},
	{"{\"a\":\"\xff\"}", true}, // invalid UTF-8 is valid JSON to encoding/json
	{`{"x":"` + strings.Repeat(`\`, 5) + `"}`, false},
	{`{"x":"` + strings.Repeat(`\`, 4) + `"}`, true},
}

func TestStrictObject(t *testing.T) {
	many := "{"
	for i := 0; i <= testMax; i++ {
		if i > 0 {
			many += ","
		}
		many += `"m` + strings.Repeat("x", i) + `":0`
	}
	many += "}"
	cases := append(strictCases, struct {
		in   string
		want bool
	}{many, false})
	for _, tc := range cases {
		exact := []string{"typ", "alg", "k"}
		got, ref := Strict([]byte(tc.in), exact, testMax), strictReference([]byte(tc.in), exact)
		if got != tc.want || ref != tc.want {
			t.Errorf("Strict(%q) = %v, reference %v, want %v", tc.in, got, ref, tc.want)
		}
	}
}

// FuzzStrict checks the scanner against the json.Decoder reference.
func FuzzStrict(f *testing.F) {
	for _, tc := range strictCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		exact := []string{"typ", "alg", "htm"}
		if got, ref := Strict(obj, exact, testMax), strictReference(obj, exact); got != ref {
			t.Fatalf("Strict(%q) = %v, reference %v", obj, got, ref)
		}
	})
}

func TestDepthWithin(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want bool
	}{
		{`{}`, 1, true},
		{`{"a":[1]}`, 1, false},
		{`{"a":[1]}`, 2, true},
		{`{"a":"[[[[{{{{"}`, 1, true},    // brackets in a string
		{`{"a":"\"[[[["}`, 1, true},      // an escaped quote
		{`{"a":"\\"}` + `[[[`, 1, false}, // an escaped backslash ends the string
		{`[[[]]][[[]]]`, 3, true},        // siblings do not add up
		{strings.Repeat("[", 33) + strings.Repeat("]", 33), 32, false},
		{strings.Repeat("[", 32) + strings.Repeat("]", 32), 32, true},
		{`"unterminated [[[`, 1, true},
		{``, 0, true},
	} {
		if got := DepthWithin([]byte(tc.in), tc.max); got != tc.want {
			t.Errorf("DepthWithin(%q, %d) = %v, want %v", tc.in, tc.max, got, tc.want)
		}
	}
}

// TestDepthWithinLinear: DepthWithin allocates nothing, whatever the
// nesting of a 1 MiB body.
func TestDepthWithinLinear(t *testing.T) {
	deep := []byte(strings.Repeat("[", 1<<20))
	wide := []byte("[" + strings.Repeat(`"[{",`, (1<<20)/5) + "0]")
	for name, b := range map[string][]byte{"deep": deep, "wide": wide} {
		if n := testing.AllocsPerRun(3, func() { DepthWithin(b, 32) }); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
	if DepthWithin(deep, 32) || !DepthWithin(wide, 32) {
		t.Error("deep passed or wide failed")
	}
}
