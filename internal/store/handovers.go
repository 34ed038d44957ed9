package store

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Handover records that a volume was handed over to a Nomad cluster: Nomad, not volctl,
// claims it until it is taken back. One orchestrator at a time.
type Handover struct {
	VolumeID  string
	Address   string // the Nomad HTTP address it was registered at
	Region    string
	Namespace string
	Forced    bool // handed over despite live local claims
	// Unsettled: a registration of the volume ended without Nomad saying how (no answer after
	// it was sent, or an error after which Nomad may still apply it), and none Nomad answered
	// OK came after: Nomad may yet take the volume, whatever it says it has now.
	Unsettled bool
	// Index is the X-Nomad-Index of the last registration Nomad answered OK (0: none known):
	// the Raft index from which its state has the volume.
	Index uint64
	// Peers are the servers (Raft peers, "10.0.0.1:4647") of the cluster its registration
	// went to, as that cluster named them to the handover (none: not known): a Nomad that
	// names none of them later is another cluster, whose 404 is not the word of this one.
	Peers    []string
	HandedAt time.Time
}

// HandoverStore reads and writes handover marks.
type HandoverStore interface {
	// Get returns a volume's mark, or an error matching ErrNotFound.
	Get(volumeID string) (Handover, error)
	// List returns every mark, ordered by volume ID.
	List() ([]Handover, error)
	// Put inserts or replaces a volume's mark and sets HandedAt; ErrConflict if the volume
	// does not exist.
	Put(h *Handover) error
	// Delete removes a volume's mark; ErrNotFound if there is none.
	Delete(volumeID string) error
	// SetOutcome records what the mark's registrations left (Handover.Unsettled,
	// Handover.Index and Handover.Peers); ErrNotFound if there is no mark.
	SetOutcome(volumeID string, unsettled bool, index uint64, peers []string) error
}

// Handovers is the handover API inside this transaction.
func (tx *Tx) Handovers() HandoverStore { return handovers{tx} }

type handovers struct{ tx *Tx }

const handoverColumns = `volume_id, address, region, namespace, forced, unsettled, nomad_index, nomad_peers, handed_at`

func scanHandover(sc scanner) (Handover, error) {
	var (
		h         Handover
		at, index int64
		peers     string
	)
	if err := sc.Scan(&h.VolumeID, &h.Address, &h.Region, &h.Namespace, &h.Forced, &h.Unsettled, &index, &peers, &at); err != nil {
		return Handover{}, err
	}
	h.HandedAt, h.Index, h.Peers = decTime(at), uint64(index), decPeers(peers)
	return h, nil
}

func handoverWhat(volumeID string) string {
	return fmt.Sprintf("Nomad handover of volume %q", volumeID)
}

func (hs handovers) Get(volumeID string) (Handover, error) {
	return getOne(hs.tx, handoverWhat(volumeID), scanHandover,
		`SELECT `+handoverColumns+` FROM nomad_handovers WHERE volume_id = ?`, volumeID)
}

func (hs handovers) List() ([]Handover, error) {
	return listAll(hs.tx, "list Nomad handovers", scanHandover,
		`SELECT `+handoverColumns+` FROM nomad_handovers ORDER BY volume_id`)
}

func (hs handovers) Put(h *Handover) error {
	now := hs.tx.now()
	_, err := hs.tx.exec(`INSERT OR REPLACE INTO nomad_handovers (`+handoverColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		h.VolumeID, h.Address, h.Region, h.Namespace, encBool(h.Forced), encBool(h.Unsettled), encIndex(h.Index), encPeers(h.Peers), encTime(now))
	if err != nil {
		return wrap(err, handoverWhat(h.VolumeID), fmt.Sprintf("volume %q does not exist", h.VolumeID))
	}
	h.HandedAt = now
	return nil
}

func (hs handovers) Delete(volumeID string) error {
	res, err := hs.tx.exec(`DELETE FROM nomad_handovers WHERE volume_id = ?`, volumeID)
	return affected(res, err, handoverWhat(volumeID), "")
}

func (hs handovers) SetOutcome(volumeID string, unsettled bool, index uint64, peers []string) error {
	res, err := hs.tx.exec(`UPDATE nomad_handovers SET unsettled = ?, nomad_index = ?, nomad_peers = ? WHERE volume_id = ?`, encBool(unsettled), encIndex(index), encPeers(peers), volumeID)
	return affected(res, err, handoverWhat(volumeID), "")
}

// encIndex stores a Raft index in SQLite's signed integer; Nomad's never reach 2^63, and one
// that did is kept as the largest (a 404 from any state is then before it: the safe side).
func encIndex(i uint64) int64 {
	if i > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(i)
}

// encPeers stores a cluster's servers comma-separated (a server's address, host:port, holds
// no comma); decPeers reads them back, none for ”.
func encPeers(peers []string) string { return strings.Join(peers, ",") }

func decPeers(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
