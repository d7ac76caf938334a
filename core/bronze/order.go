package bronze

// Order is a bronze row's place in the change order (docs/design.md §4.2, docs/bronze.md §
// The current table): (_start_lsn, _command_id, _seqval, _operation), NULL first. Snapshot
// rows (operation 0, NULL command id and seqval) sort below every change of their LSN, and
// an update's after-image (4) above its before-image (3), which shares its seqval and
// command id.
type Order struct {
	// LSN is _start_lsn ("0x" + 20 uppercase hex digits: string order is LSN order).
	LSN string
	// CommandID is _command_id, -1 for NULL.
	CommandID int64
	// Seqval is _seqval, "" for NULL.
	Seqval string
	// Op is _operation.
	Op int32
}

// Less reports whether a comes before b in the change order.
func (a Order) Less(b Order) bool {
	if a.LSN != b.LSN {
		return a.LSN < b.LSN
	}
	if a.CommandID != b.CommandID {
		return a.CommandID < b.CommandID
	}
	if a.Seqval != b.Seqval {
		return a.Seqval < b.Seqval
	}
	return a.Op < b.Op
}

// Gone reports whether a key whose latest row has operation op no longer exists: a delete
// (1), or a before-image (3) that no after-image outranks — the old key of a primary-key
// update recorded as 3+4 (docs/bronze.md § The current table).
func Gone(op int32) bool { return op == OpDelete || op == OpUpdateBefore }
