package luascript

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// File is one Lua source file of a script: its name (as errors show it)
// and its text.
type File struct {
	Name string
	Text string
}

// Script is a Redis script composed of files, in order.
type Script struct {
	*redis.Script
	src   string // the body, for EVAL (redis.Script keeps its own unexported)
	parts []part
}

// part is where one file lies in the script's body: lines first to
// first+lines-1.
type part struct {
	name         string
	first, lines int
}

// New composes files into one script: each file's text, newline-ended,
// after the one before it. File i starts at line 1 + the line count of
// files 0..i-1 (Offset). The names a file's generated section binds
// (Contract) and its reply builder are resolved in that file and the ones
// after it (inlineFiles); a use New cannot resolve is a mistake in the
// embedded files, and New panics, when the package that composes the
// script is initialised.
func New(files ...File) *Script {
	files, err := inlineFiles(files)
	if err != nil {
		panic("luascript: " + err.Error())
	}
	var b strings.Builder
	s := &Script{}
	line := 1
	for _, f := range files {
		text := f.Text
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		n := strings.Count(text, "\n")
		s.parts = append(s.parts, part{name: f.Name, first: line, lines: n})
		line += n
		b.WriteString(text)
	}
	s.src = b.String()
	s.Script = redis.NewScript(s.src)
	return s
}

// Body is the script's text as Redis runs it.
func (s *Script) Body() string { return s.src }

// Offset is the number of lines of the body before the file named name
// (0 for the first file), -1 if the script has no such file.
func (s *Script) Offset(name string) int {
	for _, p := range s.parts {
		if p.name == name {
			return p.first - 1
		}
	}
	return -1
}

// Locate maps a line of the script's body to a file and a line in it.
func (s *Script) Locate(line int) (string, int) {
	for _, p := range s.parts {
		if line >= p.first && line < p.first+p.lines {
			return p.name, line - p.first + 1
		}
	}
	return "", line
}

// Run runs the script (EVALSHA, then EVAL on NOSCRIPT) and rewrites its
// error's line numbers (Error). A run that Redis refuses because the
// keys' Cluster slot is moving (TRYAGAIN while the keys are split between
// two primaries, as a reshard leaves them) did not run, and is tried again
// with backoff until the move ends, for at most redisconn.DefaultMoveBudget
// or until ctx's deadline (redisconn.RetryMoving): every script of the
// platform comes through here, so this is the one place that retries them.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	var cmd *redis.Cmd
	err := redisconn.RetryMoving(ctx, func(ctx context.Context) error {
		cmd = s.Script.Run(ctx, c, keys, args...)
		return cmd.Err()
	})
	if err != nil {
		cmd.SetErr(err)
	}
	return s.translate(cmd)
}

// Submitter is what Submit needs of go-redis's automatic pipeliner: its
// deferred face (redis.UniversalClient's AsyncAutoPipelineWithOptions),
// which queues a command and hands back a future.
type Submitter interface {
	Submit(ctx context.Context, cmd redis.Cmder) redis.AutoFuture
}

// Submit runs the script through p (EVALSHA, then EVAL on NOSCRIPT, as Run
// does) and waits for its reply until ctx is done. The pipeliner runs a
// queued command on a context of its own (go-redis v9.23, AutoPipeliner:
// "a per-command deadline or cancellation is therefore not honored once
// the command is queued"), so ctx's deadline is what bounds the caller's
// wait: a command that waits for a batch permit, or in a batch held by a
// frozen node, is given up at ctx's deadline with ctx's error wrapped. It
// may still run after that, as a plain command whose reply came too late
// may have. Slot moves are not retried here (see Run): the caller runs a
// script refused that way again on a plain client.
func (s *Script) Submit(ctx context.Context, p Submitter, keys []string, args ...any) *redis.Cmd {
	cmd := await(ctx, p, "evalsha", s.Hash(), keys, args)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = await(ctx, p, "eval", s.src, keys, args)
	}
	return s.translate(cmd)
}

// await submits one EVAL or EVALSHA to p and waits for it until ctx is done.
// It lays out the arguments as go-redis's own Eval does (name, script,
// key count, keys, args; the first key's position for the Cluster slot)
// by hand because go-redis v9.23 gives a future, the one thing with a
// WaitContext, only for a command passed to Submit: its typed EvalSha on
// the deferred face returns a *Cmd whose accessors wait without a context.
func await(ctx context.Context, p Submitter, name, payload string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, name, payload, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // the Cluster slot is the first key's
	}
	err := p.Submit(ctx, cmd).WaitContext(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// The batch still owns cmd and may write its reply at any moment:
		// the caller gets a command of its own that carries the error.
		late := redis.NewCmd(ctx, cmdArgs...)
		late.SetErr(fmt.Errorf("redis: %s: no reply in time: %w", name, err))
		return late
	}
	return cmd
}

// Eval runs the script with EVAL (in a pipeline, which cannot fall back on
// NOSCRIPT); its error, once the pipeline ran, is translated by Translate.
func (s *Script) Eval(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return s.Script.Eval(ctx, c, keys, args...)
}

// Translate rewrites the error of cmd, a run of this script, in place (see
// Error) and returns cmd.
func (s *Script) Translate(cmd *redis.Cmd) *redis.Cmd { return s.translate(cmd) }

func (s *Script) translate(cmd *redis.Cmd) *redis.Cmd {
	if err := cmd.Err(); err != nil && err != redis.Nil {
		if msg := s.rewrite(err.Error()); msg != err.Error() {
			cmd.SetErr(&Error{Msg: msg, Err: err})
		}
	}
	return cmd
}

var lineRef = regexp.MustCompile(`user_script:([0-9]+)`)

// rewrite turns each "user_script:N" of msg into "FILE:LINE (user_script:N)".
func (s *Script) rewrite(msg string) string {
	return lineRef.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(m[len("user_script:"):])
		name, line := s.Locate(n)
		if name == "" {
			return m
		}
		return fmt.Sprintf("%s:%d (%s)", name, line, m)
	})
}

// Error is an error Redis returned for a composed script, its line
// numbers rewritten to name the file; Err is Redis's own.
type Error struct {
	Msg string
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns Redis's error.
func (e *Error) Unwrap() error { return e.Err }
