package deltalog

import "fmt"

// Conflict detection for a lost commit race (docs/reference/delta-protocol.md §10.1); the
// rules follow Spark's ConflictChecker (docs/reference/delta-protocol.md §10.2), under
// Serializable isolation. Against each winning commit:
//
//	1. the winner changed the protocol            → ConcurrentModificationError
//	2. the winner changed the metadata            → ConcurrentModificationError
//	   (a winner that created the table, when this transaction meant to create it, is
//	   the same case: the table it read does not exist any more)
//	3. the winner wrote a domain we write         → ConcurrentModificationError
//	4. the winner wrote a txn for our app id      → skipped when at or above our version
//	                                                (the batch is already in), else
//	                                                ConcurrentTxnError
//	5. the winner added a file (dataChange true)  → ConcurrentModificationError
//	   that our read predicate matches (every
//	   added file when we read the whole table)
//	6. the winner removed a file we read, or      → ConcurrentModificationError
//	   anything while we read the whole table
//	7. the winner removed a file we also remove   → ConcurrentModificationError
//
// A blind append (only adds, no declared reads) can fail only through 1–4: it read no
// files, so checks 5–7 have nothing to match, and adds, removes and txns of other app ids in
// the winner do not matter to it. Files are compared by decoded path, as Spark does: a
// winner that gave a file we read a new deletion vector removed that path's old logical
// file, which is a conflict.

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
		case a.DomainMetadata != nil && tx.writesDomain(a.DomainMetadata.Domain):
			return &ConcurrentModificationError{Version: v, Reason: fmt.Sprintf("wrote domain metadata %q, which this commit writes too", a.DomainMetadata.Domain)}
		case a.Remove != nil && (tx.readAll || tx.readPaths[a.Remove.DecodedPath()]):
			return &ConcurrentModificationError{Version: v, Path: a.Remove.DecodedPath(), Reason: "removed a file this commit read or removes"}
		case a.Add != nil && a.Add.DataChange && (tx.readAll || (tx.readPred != nil && tx.readPred(a.Add))):
			return &ConcurrentModificationError{Version: v, Path: a.Add.DecodedPath(), Reason: "added rows that this commit's read would have seen"}
		}
	}
	return nil
}

func (tx *Transaction) writesDomain(d string) bool {
	for i := range tx.domains {
		if tx.domains[i].Domain == d {
			return true
		}
	}
	return false
}
