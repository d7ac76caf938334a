package localstore

import (
	"context"
	"fmt"
	"testing"
)

// Decision 0016 takes a local file's ETag (device, inode, modification time, size) for the
// identity of one write. On ext4 a deleted file's inode goes to the next file created, so
// a file deleted and written again at once with content of the same size (another
// writer's offsets file of the same batch) differs from the first only by its
// modification time: here, with nanosecond timestamps, it does.
func TestReview2LocalETagAfterDeleteAndRewrite(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 50 {
		key := fmt.Sprintf("offsets/%d.json", i)
		t1, err := s.PutIfAbsentTag(ctx, key, []byte(`{"writer":"aaaaaaaa","id":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		t2, err := s.PutIfAbsentTag(ctx, key, []byte(`{"writer":"bbbbbbbb","id":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if t1 == "" || t1 == t2 {
			t.Fatalf("write %d: ETags %q and %q", i, t1, t2)
		}
	}
}
