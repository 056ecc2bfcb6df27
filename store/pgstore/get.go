package pgstore

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/store"
)

// Get implements store.Reader: one statement per ref, all sent in one
// pipelined batch (with the BEGIN and the queued writes when pending):
// one round trip whatever the number of refs.
func (r *reader) Get(refs []store.Ref) ([]store.Got, error) {
	got := make([]store.Got, len(refs))
	if len(refs) == 0 {
		return got, nil
	}
	var b pgx.Batch
	for i, ref := range refs {
		switch ref.Kind {
		case store.RefConversation:
			b.Queue("SELECT rec FROM lossless_conversations WHERE conv = $1", ref.Conv[:])
		case store.RefMessage:
			b.Queue(`SELECT m.seq, m.flags, m.tokens, m.ts, m.role, m.hash, CASE WHEN l.ref IS NULL THEN m.raw END, l.ref
				FROM lossless_messages m LEFT JOIN lossless_large l ON (m.flags & $3) <> 0 AND l.conv = m.conv AND l.seq = m.seq
				WHERE m.conv = $1 AND m.seq = $2`, ref.Conv[:], u(ref.Seq), int16(store.FlagLarge))
		case store.RefSummary:
			b.Queue("SELECT rec FROM lossless_summaries WHERE conv = $1 AND id = $2", ref.Conv[:], ref.ID)
		case store.RefSubagent:
			b.Queue("SELECT rec FROM lossless_subagents WHERE sub = $1", ref.Sub[:])
		case store.RefSubagentByChild:
			b.Queue(`SELECT c.sub, s.rec FROM lossless_subagent_children c LEFT JOIN lossless_subagents s ON s.sub = c.sub
				WHERE c.agent = $1 AND c.session_id = $2`, ref.Agent, ref.ID)
		default:
			return nil, fmt.Errorf("pgstore: get: ref %d of unknown kind %q", i, ref.Kind)
		}
	}
	br, err := r.send(&b)
	if err != nil {
		return nil, err
	}
	defer br.Close()
	for i, ref := range refs {
		rows, err := br.Query()
		if err != nil {
			return nil, wrapErr("get", err)
		}
		g := &got[i]
		if !rows.Next() {
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, wrapErr("get", err)
			}
			what, key := refName(ref)
			g.Err = &notFoundError{what: what, key: key}
			continue
		}
		if err := getRow(rows, ref, g); err != nil {
			rows.Close()
			return nil, err
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, wrapErr("get", err)
		}
	}
	if err := br.Close(); err != nil {
		return nil, wrapErr("get", err)
	}
	return got, nil
}

// getRow decodes the row of ref into g: a record that does not decode
// goes in g.Err, a failed scan is returned.
func getRow(rows pgx.Rows, ref store.Ref, g *store.Got) error {
	switch ref.Kind {
	case store.RefConversation, store.RefSummary, store.RefSubagent:
		var rec []byte
		if err := rows.Scan(&rec); err != nil {
			return wrapErr("get", err)
		}
		switch ref.Kind {
		case store.RefConversation:
			g.Err = decodeJSON("conversation", rec, &g.Conversation)
		case store.RefSummary:
			g.Err = decodeJSON("summary "+ref.ID, rec, &g.Summary)
		default:
			g.Err = decodeJSON("subagent", rec, &g.Subagent)
		}
	case store.RefMessage:
		m := &g.Message
		var seq, tokens int64
		var flags int16
		var hash, raw, large []byte
		if err := rows.Scan(&seq, &flags, &tokens, &m.Timestamp, &m.Role, &hash, &raw, &large); err != nil {
			return wrapErr("get", err)
		}
		m.Seq, m.Flags, m.Tokens = uint64(seq), byte(flags), int(tokens)
		if len(hash) != len(m.Hash) {
			g.Err = corrupt("message %d: key of %d bytes", m.Seq, len(hash))
			return nil
		}
		copy(m.Hash[:], hash)
		switch {
		case large != nil:
			g.Large = large
		case raw == nil:
			m.Raw = []byte{}
		default:
			m.Raw = raw
		}
	case store.RefSubagentByChild:
		var sub, rec []byte
		if err := rows.Scan(&sub, &rec); err != nil {
			return wrapErr("get", err)
		}
		if len(sub) != len(g.Sub) {
			g.Err = corrupt("subagent child %q: id of %d bytes", ref.ID, len(sub))
			return nil
		}
		copy(g.Sub[:], sub)
		if rec == nil {
			g.Err = &notFoundError{what: "subagent", key: fmt.Sprintf("%x", g.Sub)}
			return nil
		}
		g.Err = decodeJSON("subagent", rec, &g.Subagent)
	}
	return nil
}

// send sends batch b, preceded by the BEGIN not sent yet and the queued
// writes of an Update (whose results it reads): the results left are b's.
func (r *reader) send(b *pgx.Batch) (pgx.BatchResults, error) {
	if r.done {
		return nil, errEnded
	}
	var all pgx.Batch
	n := 0
	if r.begin != "" {
		all.Queue(r.begin)
		r.begin = ""
		n++
	}
	if r.w != nil {
		if r.w.failed != nil {
			return nil, r.w.failed
		}
		if !r.w.q.empty() {
			n += r.w.q.appendTo(&all)
		}
	}
	all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
	br := r.conn.SendBatch(r.ctx, &all)
	for range n {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			err = wrapErr("write", err)
			if r.w != nil {
				r.w.failed = err
			}
			return nil, err
		}
	}
	return br, nil
}

// refName names the record of ref in a not-found error.
func refName(ref store.Ref) (string, string) {
	switch ref.Kind {
	case store.RefConversation:
		return "conversation", ref.Conv.String()
	case store.RefMessage:
		return "message", fmt.Sprintf("%s/%d", ref.Conv, ref.Seq)
	case store.RefSummary:
		return "summary", fmt.Sprintf("%s/%s", ref.Conv, ref.ID)
	case store.RefSubagent:
		return "subagent", fmt.Sprintf("%x", ref.Sub)
	}
	return "subagent child", ref.Agent + ":" + ref.ID
}
