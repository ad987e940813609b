// Package console tests the operator console (authserver/console) in a
// real browser: Debian's chromium, driven by github.com/chromedp/chromedp,
// against the real binaries and the real Redis. One browser is shared by
// the suite; each operator signs in in a browser context of its own.
//
// Every page is checked with axe-core (injected from node/, installed by
// npm ci from the committed package-lock.json) for serious and critical
// violations, and walked with the Tab key: every control must take the
// focus. A screenshot of each page is saved as an artefact, in
// $CONSOLE_SCREENSHOTS or else the system's temporary directory
// (authplatform-console-screenshots); deploy/docs/console.md shows the main
// ones.
package console
