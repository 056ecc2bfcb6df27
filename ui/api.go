package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/explore"
)

// apiFunc answers one API request with a value to send as JSON.
type apiFunc func(ctx context.Context, e *lossless.Engine, r *http.Request) (any, error)

// api wraps an apiFunc: the engine from the Source, the JSON answer, and
// errors as {"error": "..."} with their status (statusOf).
func (s *Server) api(fn apiFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e, err := s.engine(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v, err := fn(r.Context(), e, r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			s.logf("lossless ui: %s: write the answer: %v", r.URL.Path, err)
		}
	}
}

// engine returns the Source's engine.
func (s *Server) engine(ctx context.Context) (*lossless.Engine, error) {
	e, err := s.src(ctx)
	if err == nil && e == nil {
		err = ErrNotOpen
	}
	return e, err
}

// badRequest is an error in the request's parameters: 400.
type badRequest struct{ error }

func badParam(format string, args ...any) error { return badRequest{fmt.Errorf(format, args...)} }

// statusOf maps an error to its HTTP status: 400 for bad parameters, 404
// for a missing session, summary or message, 503 when the engine is not
// open (or closed), 500 otherwise.
func statusOf(err error) int {
	var br badRequest
	switch {
	case errors.As(err, &br), errors.Is(err, lossless.ErrBadToolArgs), errors.Is(err, core.ErrEmptySessionID):
		return http.StatusBadRequest
	case errors.Is(err, core.ErrUnknownSession), errors.Is(err, core.ErrNotFound), errors.Is(err, dag.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrNotOpen), errors.Is(err, core.ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail answers err with its status, logging server errors.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	if code == http.StatusInternalServerError {
		s.logf("lossless ui: %s: %v", r.URL.Path, err)
	}
	writeError(w, code, err)
}

// writeError answers {"error": "..."} with code.
func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	msg := err.Error()
	if code == http.StatusServiceUnavailable && errors.Is(err, core.ErrClosed) {
		msg = ErrNotOpen.Error() + " (it was closed)"
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// intParam parses query parameter name (def when absent), refusing values
// below lo.
func intParam(r *http.Request, name string, def, lo int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo {
		return 0, badParam("%s=%q: want an integer of at least %d", name, v, lo)
	}
	return n, nil
}

// page is the paging of a list request: offset (default 0) and limit
// (default explore.DefaultPageLimit, at most explore.MaxPageLimit).
type page struct{ Offset, Limit int }

func pageParams(r *http.Request) (page, error) {
	off, err := intParam(r, "offset", 0, 0)
	if err != nil {
		return page{}, err
	}
	lim, err := intParam(r, "limit", explore.DefaultPageLimit, 1)
	if err != nil {
		return page{}, err
	}
	return page{off, min(lim, explore.MaxPageLimit)}, nil
}

// list is a page of a list as the API answers it.
type list[T any] struct {
	Total  int `json:"total"`
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
	Items  []T `json:"items"`
	// Partial is set when the list covers the first
	// explore.MaxContextScan items of a conversation's context only.
	Partial bool `json:"partial,omitempty"`
}

// session resolves the request's agent and session parameters (both
// required) to the conversation.
func session(ctx context.Context, e *lossless.Engine, r *http.Request) (*lossless.Conversation, error) {
	agent, sid := r.URL.Query().Get("agent"), r.URL.Query().Get("session")
	if agent == "" || sid == "" {
		return nil, badParam("agent and session are required")
	}
	return e.Conversation(ctx, agent, sid)
}

// cliKey is the session key `lossless assemble` runs with for agent: the
// context view assembles as it does.
func cliKey(agent string) string { return "agent:" + agent + ":cli" }
