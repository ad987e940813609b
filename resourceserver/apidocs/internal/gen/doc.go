// Command gen writes the generated files of package apidocs (directory
// generated/) from openapi.json and the guides: run by go generate in the
// apidocs directory ("go generate ./resourceserver/apidocs").
package main
