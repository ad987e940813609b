// Package pages lists the documentation's pages: the hand-written guides
// in the order of llms.txt and the generated API reference. The generator
// (package render, run by go generate) and the served documentation
// (package apidocs) both read this one list, and the names of the files
// the generator writes.
package pages
