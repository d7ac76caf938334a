package dynamo

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/internal/commitlog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// recover finishes an incomplete entry: copy its temp file to the commit file (an existing
// commit file means someone copied it already) and mark it complete. Spark's fixDeltaLog
// and delta-rs's repair_entry do the same, with 4 attempts. A temp file that is gone while
// the commit file is missing is an error after the attempts: the log cannot be completed.
func (l *LogStore) recover(ctx context.Context, e entry) error {
	if e.Complete {
		return nil
	}
	copied := false
	var err error
	for n := range l.opts.Attempts {
		if err = l.sleep(ctx, n); err != nil {
			break
		}
		if !copied {
			err = l.store.CopyIfAbsent(ctx, e.tempKey(), commitlog.Key(e.Version))
			switch {
			case err == nil, errors.Is(err, storage.ErrExists):
			case errors.Is(err, storage.ErrNotFound):
				if _, herr := l.store.Head(ctx, commitlog.Key(e.Version)); herr != nil {
					err = &TempFileMissingError{TablePath: e.TablePath, Version: e.Version, TempPath: e.TempPath}
					continue
				}
			default:
				continue
			}
			copied = true
		}
		if err = l.markComplete(ctx, e); err == nil {
			return nil
		}
	}
	return wrap("recover", e.Version, err)
}

// markComplete sets complete="true" and expireTime=now+TTL, on the condition that the entry
// is still incomplete (delta-rs's form; Spark overwrites the item, to the same effect). A
// failed condition means someone completed it already.
func (l *LogStore) markComplete(ctx context.Context, e entry) error {
	_, err := l.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &l.table,
		Key:                 itemKey(e.TablePath, e.Version),
		UpdateExpression:    aws.String("SET #c = :t, #e = :e"),
		ConditionExpression: aws.String("#c = :f"),
		ExpressionAttributeNames: map[string]string{
			"#c": attrComplete,
			"#e": attrExpireTime,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": &types.AttributeValueMemberS{Value: "true"},
			":f": &types.AttributeValueMemberS{Value: "false"},
			":e": expireValue(l.opts.Now(), l.opts.TTL),
		},
	})
	if err != nil && !isConditionFailed(err) {
		return err
	}
	return nil
}

// getEntry reads entry v with a strongly consistent read.
func (l *LogStore) getEntry(ctx context.Context, v int64) (entry, bool, error) {
	out, err := l.ddb.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &l.table,
		Key:            itemKey(l.tablePath, v),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return entry{}, false, err
	}
	if out.Item == nil {
		return entry{}, false, nil
	}
	e, err := parseEntry(out.Item)
	return e, err == nil, err
}

// entriesQueried is how many of the newest entries the Query of Latest and OpenLatest
// reads (one request, strongly consistent: under 8 KB of items, 2 read units): the newest
// decides, and the entry of the version this LogStore knew, when among them, is checked
// (checkIdentity) without a GetItem. Many more commits by others between two calls than
// this, and it is read with a GetItem.
const entriesQueried = 32

// newestEntries queries the table's newest entries, newest first (consistent read). An
// unparsable newest entry is an error; older unparsable ones are left out.
func (l *LogStore) newestEntries(ctx context.Context) (page []entry, full bool, err error) {
	out, err := l.ddb.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &l.table,
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": attrTablePath},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: l.tablePath}},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(entriesQueried),
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return nil, false, err
	}
	for i, item := range out.Items {
		e, err := parseEntry(item)
		if err != nil {
			if i == 0 {
				return nil, false, err
			}
			continue
		}
		page = append(page, e)
	}
	return page, len(out.Items) == entriesQueried, nil
}
