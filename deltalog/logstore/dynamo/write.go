package dynamo

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/internal/commitlog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Write makes data version v (see the package doc for the steps). It returns
// logstore.ErrVersionExists when v is taken, a *PreviousCommitMissingError or
// *StaleEntryError when the log and the DynamoDB table disagree, and nil once the entry is
// ours, even when publishing it failed (a later Latest or Read, by anyone, finishes it).
func (l *LogStore) Write(ctx context.Context, v int64, data []byte) error {
	if v < 0 {
		return wrap("write", v, errors.New("negative version"))
	}
	if !l.knows(v - 1) {
		if err := l.precheck(ctx, v); err != nil {
			return err
		}
	}

	e := entry{TablePath: l.tablePath, Version: v, TempPath: fmt.Sprintf(".tmp/%020d.json.%s", v, l.opts.NewID())}
	if err := l.store.Put(ctx, e.tempKey(), bytes.NewReader(data), int64(len(data))); err != nil {
		return wrap("write temp file of", v, err)
	}
	claimedAt := l.opts.Now()
	_, err := l.ddb.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           &l.table,
		Item:                e.claimItem(),
		ConditionExpression: aws.String("attribute_not_exists(" + attrFileName + ")"),
	})
	if isConditionFailed(err) {
		// Either another writer holds v, or this is our own claim: the SDK retries a
		// PutItem whose answer was lost, and the retry fails the condition on the item
		// the first request created. The item's tempPath (unique per attempt) tells.
		held, found, gerr := l.getEntry(ctx, v)
		if gerr != nil {
			// Undecided: keep the temp file, an item may point to it.
			return wrap("claim: read back entry of", v, gerr)
		}
		if !found {
			// The entry we collided with is gone (a delta-rs writer aborts its own
			// incomplete entry): nobody holds v now. Not a lost race; undecided, so the
			// caller reads v back and finds it free.
			_ = l.store.Delete(ctx, e.tempKey())
			return wrap("claim", v, errEntryGone)
		}
		if held.TempPath != e.TempPath {
			// The temp file is nobody's; nothing refers to it (Spark would leave it too).
			_ = l.store.Delete(ctx, e.tempKey())
			return wrap("write", v, logstore.ErrVersionExists)
		}
	} else if err != nil {
		return wrap("claim", v, err)
	}

	// Version v is ours from here on: never report failure, never delete the entry.
	mine, tag, err := l.publish(ctx, e, data)
	if err != nil {
		return nil // left incomplete; the next reader or writer recovers it
	}
	if !mine {
		// v.json already held other bytes: the entry of its writer had expired, so our
		// conditional put succeeded although v was taken. The file is the truth.
		return wrap("write", v, logstore.ErrVersionExists)
	}
	l.observe(v, claimedAt, e.TempPath, tag)
	return nil
}

// precheck is step 1: v.json must be absent, and the previous commit whole.
func (l *LogStore) precheck(ctx context.Context, v int64) error {
	if _, err := l.store.Head(ctx, commitlog.Key(v)); err == nil {
		return wrap("write", v, logstore.ErrVersionExists)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return wrap("check", v, err)
	}
	if v == 0 {
		// A complete entry for 0 with no 0.json: the table was deleted and re-created
		// within the TTL; its old entries would corrupt the new table.
		e, found, err := l.getEntry(ctx, 0)
		if err != nil {
			return wrap("check", v, err)
		}
		if !found || !e.Complete {
			return nil
		}
		// Complete: 0.json must exist now (a racing writer may have just made it).
		if _, err := l.store.Head(ctx, commitlog.Key(0)); err == nil {
			return wrap("write", v, logstore.ErrVersionExists)
		} else if !errors.Is(err, storage.ErrNotFound) {
			return wrap("check", v, err)
		}
		return &StaleEntryError{TablePath: l.tablePath, Version: 0}
	}
	prev, found, err := l.getEntry(ctx, v-1)
	if err != nil {
		return wrap("check", v, err)
	}
	if found && !prev.Complete {
		return l.recover(ctx, prev)
	}
	if _, err := l.store.Head(ctx, commitlog.Key(v-1)); errors.Is(err, storage.ErrNotFound) {
		return &PreviousCommitMissingError{TablePath: l.tablePath, Version: v - 1}
	} else if err != nil {
		return wrap("check", v, err)
	}
	return nil
}

// publish copies the entry's temp file to its commit file and marks the entry complete,
// with up to Attempts tries. mine is false when the commit file already held other bytes.
// tag is the commit file's ETag, from the answer of the request that copied, read or
// described it ("" when the store did not say): the identity of the newest commit this
// LogStore knows once its entry expires (known.ETag), at no request more.
func (l *LogStore) publish(ctx context.Context, e entry, data []byte) (mine bool, tag string, err error) {
	copied := false
	for n := range l.opts.Attempts {
		if err = l.sleep(ctx, n); err != nil {
			return true, "", err
		}
		if !copied {
			tag, err = storage.CopyIfAbsentTag(ctx, l.store, e.tempKey(), commitlog.Key(e.Version))
			switch {
			case err == nil:
			case errors.Is(err, storage.ErrExists):
				// Someone recovered our entry already, or the file predates our claim.
				got, gotTag, rerr := commitlog.ReadTag(ctx, l.store, e.Version)
				if rerr != nil {
					err = rerr
					continue
				}
				if !bytes.Equal(got, data) {
					_ = l.markComplete(ctx, e)
					return false, "", nil
				}
				tag = gotTag
			case errors.Is(err, storage.ErrNotFound):
				// The temp file moved: a delta-rs recovery copies, then deletes it.
				info, herr := l.store.Head(ctx, commitlog.Key(e.Version))
				if herr != nil {
					err = herr
					continue
				}
				tag = info.ETag
			default:
				continue
			}
			copied = true
		}
		if err = l.markComplete(ctx, e); err == nil {
			return true, tag, nil
		}
	}
	return true, tag, err
}

// errEntryGone: a claim failed its condition, yet the entry it collided with no longer
// exists when read back.
var errEntryGone = errors.New("the entry the claim collided with is gone (aborted); the version is free")

// newUUID returns a random (version 4) UUID in its 36-character form.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
