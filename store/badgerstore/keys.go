package badgerstore

import (
	"encoding/binary"

	"github.com/lossless-engine/contextengine/store"
)

// Key prefixes (see doc.go for the layout). They are those of package
// lossless, byte for byte.
const (
	pMeta     = 0x00 // 0x00 "format" -> Meta JSON
	pConv     = 'C'  // C conv(8) -> Conversation JSON
	pName     = 'N'  // N agent 0x00 kind ':' value -> conv(8)
	pMsg      = 'M'  // M conv(8) seq(8) -> message record
	pHash     = 'H'  // H conv(8) hash(16) -> seq(8)
	pItem     = 'I'  // I conv(8) pos(8) -> item record
	pLarge    = 'L'  // L conv(8) seq(8) -> large-content reference
	pSummary  = 'S'  // S conv(8) id -> summary record
	pEntry    = 'E'  // E conv(8) tag(8) kind ... -> entry maps
	pOrder    = 'O'  // O conv(8) seq(8) -> pos(8)
	pCheck    = 'F'  // F agent 0x00 path -> checkpoint JSON
	pTurn     = 'T'  // T conv(8) advancementKey -> Turn JSON
	pSub      = 'G'  // G sub(8) -> Subagent JSON
	pSubAlias = 'g'  // g agent 0x00 sessionId -> sub(8)
	pForkItem = 'Y'  // Y sub(8) pos(8) -> item record
	pSubLink  = 'K'  // K parent(8) sub(8) -> child session key
)

// Kinds of entry-map keys after E conv tag (besides the file maps' own
// store.EntryMap bytes 'x', 'o', and hostKind 'h' under hostTag).
const (
	entryIDKind   = 'i' // E conv tag 'i' entryId -> index(8)
	reconcileKind = 'f' // E conv tag 'f' -> seq(8)
)

// hostCheckPrefix starts the path of a host checkpoint's key.
const hostCheckPrefix = "host:"

var metaKey = []byte{pMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// convScoped are the prefixes whose keys, followed by a conversation id,
// belong to that conversation (DeleteConversationData); those of
// lossless/retention.
var convScoped = [...]byte{pMsg, pHash, pItem, pLarge, pSummary, pEntry, pOrder, pTurn}

func putU64(b []byte, v uint64) { binary.BigEndian.PutUint64(b, v) }

func u64Bytes(v uint64) []byte {
	b := make([]byte, 8)
	putU64(b, v)
	return b
}

func convPrefix(prefix byte, id [8]byte) []byte {
	k := make([]byte, 9)
	k[0] = prefix
	copy(k[1:], id[:])
	return k
}

func convKey(c store.ConvID) []byte { return convPrefix(pConv, c) }

// seqKey is prefix id(8) n(8): messages, items, large references, order
// records and fork items.
func seqKey(prefix byte, id [8]byte, n uint64) []byte {
	k := make([]byte, 17)
	k[0] = prefix
	copy(k[1:9], id[:])
	putU64(k[9:], n)
	return k
}

func msgKey(c store.ConvID, seq uint64) []byte   { return seqKey(pMsg, c, seq) }
func itemKey(c store.ConvID, pos uint64) []byte  { return seqKey(pItem, c, pos) }
func largeKey(c store.ConvID, seq uint64) []byte { return seqKey(pLarge, c, seq) }
func orderKey(c store.ConvID, seq uint64) []byte { return seqKey(pOrder, c, seq) }
func forkItemKey(s store.SubID, pos uint64) []byte {
	return seqKey(pForkItem, s, pos)
}

// agentKey is prefix agent 0x00 rest: names, checkpoints, subagent aliases.
func agentKey(prefix byte, agent, rest string) []byte {
	k := make([]byte, 0, 2+len(agent)+len(rest))
	k = append(k, prefix)
	k = append(k, agent...)
	k = append(k, 0)
	return append(k, rest...)
}

func nameKey(n store.Name) []byte {
	k := make([]byte, 0, 4+len(n.Agent)+len(n.Value))
	k = append(k, pName)
	k = append(k, n.Agent...)
	k = append(k, 0, byte(n.Kind), ':')
	return append(k, n.Value...)
}

func hashKey(c store.ConvID, h store.Hash) []byte {
	k := make([]byte, 25)
	k[0] = pHash
	copy(k[1:9], c[:])
	copy(k[9:], h[:])
	return k
}

// idKey is prefix id(8) s: summaries and turns.
func idKey(prefix byte, c store.ConvID, s string) []byte {
	k := make([]byte, 9, 9+len(s))
	k[0] = prefix
	copy(k[1:], c[:])
	return append(k, s...)
}

func summaryKey(c store.ConvID, id string) []byte { return idKey(pSummary, c, id) }
func turnKey(c store.ConvID, key string) []byte   { return idKey(pTurn, c, key) }

// entryMapPrefix is E conv tag kind: the prefix of one entry map, and the
// whole key of the reconcile record (kind 'f').
func entryMapPrefix(c store.ConvID, tag store.FileTag, kind byte) []byte {
	k := make([]byte, 18, 26)
	k[0] = pEntry
	copy(k[1:9], c[:])
	copy(k[9:17], tag[:])
	k[17] = kind
	return k
}

func entryKey(c store.ConvID, tag store.FileTag, kind byte, index uint64) []byte {
	k := entryMapPrefix(c, tag, kind)
	return binary.BigEndian.AppendUint64(k, index)
}

func entryIDKey(c store.ConvID, tag store.FileTag, id string) []byte {
	return append(entryMapPrefix(c, tag, entryIDKind), id...)
}

func reconcileFromKey(c store.ConvID, tag store.FileTag) []byte {
	return entryMapPrefix(c, tag, reconcileKind)
}

func checkKey(agent, path string) []byte { return agentKey(pCheck, agent, path) }

func hostCheckKey(agent string, c store.ConvID) []byte {
	return checkKey(agent, hostCheckPrefix+c.String())
}

func subKey(s store.SubID) []byte { return convPrefix(pSub, s) }

func subAliasKey(agent, sessionID string) []byte { return agentKey(pSubAlias, agent, sessionID) }

func subLinkKey(parent store.ConvID, s store.SubID) []byte {
	k := make([]byte, 17)
	k[0] = pSubLink
	copy(k[1:9], parent[:])
	copy(k[9:], s[:])
	return k
}
