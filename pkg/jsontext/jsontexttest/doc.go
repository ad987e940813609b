// Package jsontexttest gives the tests of hand-written JSON (package
// jsontext and the bodies written with it) encoding/json's text of a value,
// the bytes each must equal.
package jsontexttest
