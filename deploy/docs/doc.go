// Package docs holds the operator and ops documentation (the Markdown pages
// beside this file, indexed by README.md) and the tests that keep it true:
// every relative link of the repository's README.md and of every page here
// resolves to a file, and every #anchor to a heading of that file
// (TestLinks); the index links every page (TestIndexLinksEveryPage); and
// configuration.md lists exactly the flags, environment variables and
// defaults that the built `authserver serve -h` and `resourceserver serve -h`
// print (TestConfigurationReference). The package has no code of its own:
// the partner documentation the resource server serves is
// resourceserver/apidocs's.
package docs
