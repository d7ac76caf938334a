package deltalog

import (
	"strings"
	"testing"
)

// A Spark commit: unknown action types and fields are ignored; commitInfo keeps every
// field it does not type.
const lgSparkCommit = `{"commitInfo":{"timestamp":1587968586154,"operation":"WRITE","operationParameters":{"mode":"ErrorIfExists","partitionBy":"[]"},"isolationLevel":"Serializable","isBlindAppend":true,"operationMetrics":{"numFiles":"1"},"engineInfo":"Apache-Spark/3.3.0 Delta-Lake/2.2.0","txnId":"abc"}}
{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"x","name":null,"format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":["p"],"configuration":{},"createdTime":1}}
{"add":{"path":"p=__HIVE_DEFAULT_PARTITION__/part%20one.parquet","partitionValues":{"p":null},"size":1,"modificationTime":2,"dataChange":true,"stats":"{\"numRecords\":3}","futureField":1}}

{"futureAction":{"a":1}}
{"txn":{"appId":"app","version":7,"lastUpdated":3}}
`

func TestDecodeActions(t *testing.T) {
	acts, err := DecodeActions([]byte(lgSparkCommit))
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 5 {
		t.Fatalf("%d actions, want 5 (the unknown action ignored)", len(acts))
	}
	ci := acts[0].CommitInfo
	if ci.Operation != "WRITE" || ci.OperationParameters["partitionBy"] != "[]" || ci.IsBlindAppend == nil || !*ci.IsBlindAppend ||
		ci.EngineInfo == "" || ci.TxnID != "abc" || string(ci.Extra["operationMetrics"]) != `{"numFiles":"1"}` {
		t.Errorf("commitInfo %+v", ci)
	}
	a := acts[3].Add
	if v, ok := a.PartitionValues["p"]; !ok || v != "" {
		t.Errorf("null partition value read as %q %v, want \"\"", v, ok)
	}
	if a.DecodedPath() != "p=__HIVE_DEFAULT_PARTITION__/part one.parquet" {
		t.Errorf("DecodedPath %q", a.DecodedPath())
	}
	if n, ok := a.NumRecords(); !ok || n != 3 {
		t.Errorf("NumRecords %d %v", n, ok)
	}
	if acts[4].Txn.Version != 7 {
		t.Errorf("txn %+v", acts[4].Txn)
	}

	// Re-encoding keeps one action per line and commitInfo's extra fields.
	out, err := EncodeActions(acts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 5 || !strings.HasSuffix(string(out), "\n") {
		t.Fatalf("encoded %q", out)
	}
	if !strings.Contains(lines[0], `"operationMetrics":{"numFiles":"1"}`) || !strings.Contains(lines[0], `"isBlindAppend":true`) {
		t.Errorf("commitInfo re-encoded as %s", lines[0])
	}
	again, err := DecodeActions(out)
	if err != nil || len(again) != 5 || again[2].MetaData.PartitionColumns[0] != "p" {
		t.Errorf("decode of re-encoded: %v %+v", err, again)
	}
}

func TestEncodeActionsRequiredFields(t *testing.T) {
	out, err := EncodeActions([]Action{{MetaData: &Metadata{ID: "x", SchemaString: "{}"}}, {Add: &Add{Path: "f"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}` + "\n" +
		`{"add":{"path":"f","partitionValues":{},"size":0,"modificationTime":0,"dataChange":false}}` + "\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if _, err := EncodeActions([]Action{{}}); err == nil {
		t.Error("an empty action was encoded")
	}
	if _, err := EncodeActions([]Action{{Add: &Add{}, Remove: &Remove{}}}); err == nil {
		t.Error("an action with two fields was encoded")
	}
}

func TestDeletionVectorUniqueID(t *testing.T) {
	inline := &DeletionVector{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"}
	if inline.UniqueID() != "iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L" {
		t.Errorf("inline %q", inline.UniqueID())
	}
	var none *DeletionVector
	if none.UniqueID() != "" {
		t.Error("nil DV id")
	}
}

func TestProtocolJSON(t *testing.T) {
	for p, want := range map[*Protocol]string{
		{MinReaderVersion: 1, MinWriterVersion: 2, ReaderFeatures: []string{"x"}}:          `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`,
		{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly"}}: `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["appendOnly"]}}`,
		{MinReaderVersion: 3, MinWriterVersion: 7}:                                         `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":[],"writerFeatures":[]}}`,
	} {
		out, err := EncodeActions([]Action{{Protocol: p}})
		if err != nil || string(out) != want+"\n" {
			t.Errorf("got %s, %v; want %s", out, err, want)
		}
	}
}
