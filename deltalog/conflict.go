package deltalog

// Conflict detection for a lost commit race (docs/reference/delta-protocol.md §10.1); the
// rules follow Spark's ConflictChecker (docs/reference/delta-protocol.md §10.2).
//
// A Transaction only appends and reads nothing but the snapshot's protocol, metadata and
// its own app id's txn version, so of Spark's checks only these can fail it:
//
//	1. the winner changed the protocol            → ConcurrentModificationError
//	2. the winner changed the metadata            → ConcurrentModificationError
//	   (a winner that created the table, when this transaction meant to create it, is
//	   the same case: the table it read does not exist any more)
//	4. the winner wrote a txn for our app id      → skipped when at or above our version
//	                                                (the batch is already in), else
//	                                                ConcurrentTxnError
//
// Adds, removes and txns of other app ids in the winner do not matter: a blind append
// read no files (checks 6–8 have nothing to match) and does not depend on other apps.
// Domain metadata (check 3) cannot conflict because a Transaction writes none.

// winnerRecordsUs reports whether a winning commit recorded our app id's txn at or above
// our version: the batch is already in the table, so the transaction is skipped whatever
// else the winners did.
func (tx *Transaction) winnerRecordsUs(actions []Action) bool {
	if !tx.hasApp {
		return false
	}
	for _, a := range actions {
		if a.Txn != nil && a.Txn.AppID == tx.appID && a.Txn.Version >= tx.appVersion {
			return true
		}
	}
	return false
}

// checkWinner checks winning commit v's actions against the transaction and returns the
// conflict, or nil when the transaction may commit after it.
func (tx *Transaction) checkWinner(v int64, actions []Action) error {
	for _, a := range actions {
		switch {
		case a.Protocol != nil || a.MetaData != nil:
			reason := "changed the metadata"
			switch {
			case tx.snap.Version() < 0:
				reason = "created the table"
			case a.Protocol != nil:
				reason = "changed the protocol"
			}
			return &ConcurrentModificationError{Version: v, Reason: reason}
		case a.Txn != nil && tx.hasApp && a.Txn.AppID == tx.appID:
			return &ConcurrentTxnError{AppID: tx.appID, Version: v, Recorded: a.Txn.Version}
		}
	}
	return nil
}
