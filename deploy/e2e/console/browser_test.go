//go:build unix

package console

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// browser is the suite's one chromium.
type browser struct {
	ctx context.Context
	axe string // axe.min.js
}

// newBrowser starts headless chromium (--no-sandbox: the suite may run as
// root) for the whole test.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed and CI=true forbids skipping (.ci/run installs it)")
		}
		t.Skip("chromium is not installed")
	}
	axe := axeSource(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{ctx: ctx, axe: axe}
}

// tab is one operator's tab, in a browser context of its own (its own
// cookies), with a count of the JavaScript dialogs that opened (each is
// dismissed).
type tab struct {
	t       *testing.T
	ctx     context.Context
	dialogs *atomic.Int32
}

func (b *browser) tab(t *testing.T) *tab {
	t.Helper()
	tb := &tab{t: t, dialogs: &atomic.Int32{}}
	var ctx context.Context
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext(), chromedp.WithListener(func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			tb.dialogs.Add(1)
			go func() {
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}()
		}
	}))
	tb.ctx = ctx
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	return tb
}

// bounded is the tab's context with a bound that only a hung browser
// reaches.
func (tb *tab) bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(tb.ctx, 30*time.Second)
}

// run runs actions, failing the test on an error.
func (tb *tab) run(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := tb.bounded()
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatal(err)
	}
}

// value runs one action and returns its value.
func value[T any](tb *tab, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := tb.bounded()
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.t.Fatal(err)
	}
	return v
}

// navigate runs the actions (a navigation, or a click that submits a form)
// and returns the status of the document's answer.
func (tb *tab) navigate(actions ...chromedp.Action[chromedp.Void]) int64 {
	tb.t.Helper()
	ctx, cancel := tb.bounded()
	defer cancel()
	res, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		tb.t.Fatal(err)
	}
	if res == nil {
		return 0
	}
	return res.Status
}

func (tb *tab) open(url string) int64 { return tb.navigate(chromedp.Navigate(url)) }

// submit clicks the button sel (an XPath, "//...", or a CSS selector) and
// returns the status of the page it posts to.
func (tb *tab) submit(sel string) int64 {
	if strings.HasPrefix(sel, "//") {
		return tb.navigate(chromedp.Click(chromedp.Search(sel), chromedp.NodeVisible))
	}
	return tb.navigate(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// text is the text of the element the CSS selector sel selects.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return value(tb, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
}

// typeInto focuses the field sel (CSS) and enters text into it as one
// input (Input.insertText, as a paste or an input method does: the
// field's input events fire), not a key press per character
// (chromedp.SendKeys), which cost the suite a quarter of its time: three
// browser round trips a character, a client secret at a time.
func (tb *tab) typeInto(sel, text string) {
	tb.t.Helper()
	tb.run(chromedp.Focus(chromedp.CSS(sel), chromedp.NodeVisible), func(ctx context.Context, target *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, target, input.InsertText, input.InsertTextParams{Text: text})
		return chromedp.Void{}, err
	})
}

func (tb *tab) body() string { return tb.text("main") }

// cookies are the browser's cookies for url.
func (tb *tab) cookies(url string) []*network.Cookie {
	tb.t.Helper()
	ctx, cancel := tb.bounded()
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
	if err != nil {
		tb.t.Fatal(err)
	}
	return res.Cookies
}

// screenshot saves the page as name.png among the suite's artefacts.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	png := value(tb, chromedp.FullScreenshot(100))
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "authplatform-console-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

// axeViolation is one serious or critical finding of axe-core.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// accessible injects axe-core into the page and fails the test on every
// serious or critical violation; then walks the page with the Tab key and
// fails on a control that never takes the focus.
func (tb *tab) accessible(b *browser, name string) {
	tb.t.Helper()
	tb.run(chromedp.Evaluate[chromedp.Void](b.axe))
	vs := value(tb, chromedp.Evaluate[[]axeViolation](`axe.run(document).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" "))})))`,
		chromedp.EvalAwaitPromise))
	for _, v := range vs {
		tb.t.Errorf("%s: axe %s (%s): %s at %s", name, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, ", "))
	}
	tb.keyboard(name)
}

// controls are what a keyboard user must reach with Tab: a radio group is
// one stop (its checked radio; the arrow keys move within it, as browsers
// do).
const controls = `Array.from(document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea'))
	.filter(e => !e.disabled && e.getClientRects().length > 0)
	.filter(e => e.type !== "radio" || e === (e.form.querySelector('input[type=radio][name="' + e.name + '"]:checked') ||
		e.form.querySelector('input[type=radio][name="' + e.name + '"]')))`

// keyboard presses Tab from the top of the page until the focus has been
// on every control (or has come round again), and fails on a control it
// never reached.
func (tb *tab) keyboard(name string) {
	tb.t.Helper()
	n := value(tb, chromedp.Evaluate[int](`(document.activeElement && document.activeElement.blur(), window.__seen = new Set(), `+controls+`.length)`))
	for range n + 3 {
		tb.run(chromedp.KeyEvent(kb.Tab))
		done := value(tb, chromedp.Evaluate[bool](`(() => { const c = `+controls+`; const i = c.indexOf(document.activeElement);
			if (i >= 0) window.__seen.add(i); return window.__seen.size === c.length; })()`))
		if done {
			return
		}
	}
	missed := value(tb, chromedp.Evaluate[[]string](`(() => { const c = `+controls+`; return c.filter((e, i) => !window.__seen.has(i)).map(e => e.outerHTML.slice(0, 80)); })()`))
	if len(missed) > 0 {
		tb.t.Errorf("%s: not reachable by Tab: %v", name, missed)
	}
}
