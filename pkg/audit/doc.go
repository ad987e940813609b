// Package audit provides the one audit record of the platform and who made
// it (Actor): the registry's trails (a client's, an organisation's, package
// clients) and the admin API's trail of calls (authserver/adminapi) all
// store and read a Record, each in the encoding that suits its Redis type
// (Record.Line for a list, Record.Fields for a stream). No record ever
// holds a secret or a request body.
//
// The actor goes with the context (WithActor) from the door that made the
// change, the admin API or the CLI, to the registry that records it.
package audit
