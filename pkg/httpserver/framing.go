package httpserver

import (
	"bytes"
	"strconv"
)

// framing follows the HTTP/1.1 message framing (RFC 9112 sections 6 and 7)
// of the bytes read from a connection, to tell whether a request carried
// both Content-Length and Transfer-Encoding. net/http serves such a request
// by its Transfer-Encoding and deletes the Content-Length header before the
// handler sees it, so only the bytes tell; RFC 9112 section 6.1 says the
// server MUST close the connection after answering it (the request may be
// an attempt at request smuggling through a proxy that read the other
// header).
//
// It reads heads line by line, skips Content-Length bodies whole and
// follows chunked ones chunk by chunk, so a body that looks like a request
// head is never taken for one. On anything it does not understand (a head
// line over maxLine bytes, a bad length) it stops watching: net/http
// refuses such requests itself and closes the connection.
type framing struct {
	state  int
	line   []byte
	remain int64
	// Of the current head: request line seen, Content-Length value (-1:
	// none), Transfer-Encoding present.
	started bool
	length  int64
	te      bool
}

const (
	inHead = iota
	inBody
	inChunkSize
	inChunkData
	inChunkEnd
	inTrailer
	lost
)

// maxLine bounds a buffered line: net/http's own header cap.
const maxLine = MaxHeaderBytes + 4096

// feed takes the next bytes read and reports whether a head with both
// Content-Length and Transfer-Encoding has just ended. Once it has, or once
// it is lost, feed does nothing more.
func (f *framing) feed(p []byte) bool {
	for len(p) > 0 && f.state != lost {
		switch f.state {
		case inBody, inChunkData:
			n := int64(len(p))
			if n > f.remain {
				n = f.remain
			}
			f.remain -= n
			p = p[n:]
			if f.remain == 0 {
				if f.state == inBody {
					f.state = inHead
				} else {
					f.state = inChunkEnd
				}
			}
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			f.buffer(p)
			return false
		}
		f.buffer(p[:i])
		p = p[i+1:]
		if f.state == lost {
			return false
		}
		line := bytes.TrimSuffix(f.line, []byte("\r"))
		ambiguous := f.endLine(line)
		f.line = f.line[:0]
		if ambiguous {
			f.state = lost
			return true
		}
	}
	return false
}

func (f *framing) buffer(b []byte) {
	if len(f.line)+len(b) > maxLine {
		f.state = lost
		return
	}
	f.line = append(f.line, b...)
}

// endLine handles one complete line and reports an ambiguous head.
func (f *framing) endLine(line []byte) bool {
	switch f.state {
	case inHead:
		if !f.started {
			if len(line) > 0 { // empty lines before a request line are ignored (RFC 9112 section 2.2)
				f.started, f.length, f.te = true, -1, false
			}
			return false
		}
		if len(line) > 0 {
			name, value, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				return false
			}
			switch name = bytes.TrimSpace(name); {
			case bytes.EqualFold(name, []byte("Content-Length")):
				n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
				if err != nil || n < 0 {
					f.state = lost
					return false
				}
				f.length = n
			case bytes.EqualFold(name, []byte("Transfer-Encoding")):
				f.te = true
			}
			return false
		}
		// End of the head.
		f.started = false
		switch {
		case f.te && f.length >= 0:
			return true
		case f.te:
			f.state = inChunkSize
		case f.length > 0:
			f.state, f.remain = inBody, f.length
		}
	case inChunkSize:
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		switch {
		case err != nil || n < 0:
			f.state = lost
		case n == 0:
			f.state = inTrailer
		default:
			f.state, f.remain = inChunkData, n
		}
	case inChunkEnd:
		f.state = inChunkSize
	case inTrailer:
		if len(line) == 0 {
			f.state = inHead
		}
	}
	return false
}
