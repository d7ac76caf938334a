package emulators

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// objectStore is the S3 emulator's gofakes3.Backend: buckets of objects without
// versioning, each bucket's keys kept sorted so that a LIST reads only the keys it
// answers.
//
// Why not gofakes3's s3mem: its LIST starts at the marker (or the bucket's first key) and
// reads every later key of the bucket, matching each against the prefix, until a page is
// full. A Delta log LIST (prefix "<table>/_delta_log/", start-after the known version)
// then walks every data file of the table, which sort after "_delta_log/", and a table's
// commit costs more the more files it has: an artefact no S3 has (docs/performance.md
// "The full-step month, run to the end"). Here a LIST starts at the later of the prefix
// and the marker and stops at the first key past the prefix.
//
// Bodies are held in memory, or with dir set in one file each under dir, so that an
// emulator serving a month of a hundred tables holds only keys and metadata in its heap.
//
// What S3 does that s3mem did not, kept here: an overwrite replaces the metadata (s3mem
// merged the old into the new). Conditional puts (If-None-Match, If-Match) are decided
// under the bucket's lock, so two racing conditional writers cannot both win.
type objectStore struct {
	now func() time.Time
	dir string // "" keeps bodies in memory
	seq atomic.Uint64
	// listed counts the keys LISTs have read, for tests of what a LIST costs.
	listed atomic.Int64

	mu      sync.RWMutex
	buckets map[string]*objectBucket
}

type objectBucket struct {
	created time.Time
	keys    []string // sorted, the keys of objects
	objects map[string]*storedObject
}

// storedObject is one object: its body in memory (body) or in the file path.
type storedObject struct {
	body     []byte
	path     string
	size     int64
	md5      []byte
	meta     map[string]string
	modified time.Time
}

// newObjectStore returns an empty store whose objects get their modification times from
// now, with bodies in files under dir (created if missing) or, with dir "", in memory.
func newObjectStore(now func() time.Time, dir string) (*objectStore, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("S3 emulator body directory: %w", err)
		}
	}
	return &objectStore{now: now, dir: dir, buckets: map[string]*objectBucket{}}, nil
}

func (s *objectStore) ListBuckets() ([]gofakes3.BucketInfo, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]gofakes3.BucketInfo, 0, len(s.buckets))
	for name, b := range s.buckets {
		out = append(out, gofakes3.BucketInfo{Name: name, CreationDate: gofakes3.NewContentTime(b.created)})
	}
	slices.SortFunc(out, func(a, b gofakes3.BucketInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ListBucket answers from the keys at or after the prefix (and after page.Marker), up
// to the first key that does not begin with the prefix. With a delimiter, the keys of
// one common prefix count once toward page.MaxKeys, as in S3.
func (s *objectStore) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, err := s.bucket(name)
	if err != nil {
		return nil, err
	}
	from := ""
	if prefix.HasPrefix {
		from = prefix.Prefix
	}
	i := sort.SearchStrings(b.keys, from)
	if page.Marker != "" {
		if j := sort.SearchStrings(b.keys, page.Marker); j > i {
			i = j
		}
		if i < len(b.keys) && b.keys[i] == page.Marker {
			i++
		}
	}
	out := gofakes3.NewObjectList()
	var match gofakes3.PrefixMatch
	var n int64
	lastCommon := ""
	for ; i < len(b.keys); i++ {
		key := b.keys[i]
		s.listed.Add(1)
		if prefix.HasPrefix && !strings.HasPrefix(key, prefix.Prefix) {
			break
		}
		if !prefix.Match(key, &match) {
			continue
		}
		if match.CommonPrefix {
			if match.MatchedPart == lastCommon {
				continue
			}
			out.AddPrefix(match.MatchedPart)
			lastCommon = match.MatchedPart
		} else {
			o := b.objects[key]
			out.Add(&gofakes3.Content{
				Key:          key,
				LastModified: gofakes3.NewContentTime(o.modified),
				ETag:         gofakes3.FormatETag(o.md5),
				Size:         o.size,
			})
		}
		n++
		if page.MaxKeys > 0 && n >= page.MaxKeys {
			out.NextMarker = key
			next := i + 1
			out.IsTruncated = next < len(b.keys) && (!prefix.HasPrefix || strings.HasPrefix(b.keys[next], prefix.Prefix))
			break
		}
	}
	return out, nil
}

func (s *objectStore) CreateBucket(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buckets[name] != nil {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	s.buckets[name] = &objectBucket{created: s.now(), objects: map[string]*storedObject{}}
	return nil
}

func (s *objectStore) BucketExists(name string) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.buckets[name] != nil, nil
}

func (s *objectStore) DeleteBucket(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[name]
	if b == nil {
		return gofakes3.ErrNoSuchBucket
	}
	if len(b.keys) > 0 {
		return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
	}
	delete(s.buckets, name)
	return nil
}

func (s *objectStore) ForceDeleteBucket(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[name]
	if b == nil {
		return gofakes3.ErrNoSuchBucket
	}
	for _, o := range b.objects {
		s.drop(o)
	}
	delete(s.buckets, name)
	return nil
}

func (s *objectStore) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, err := s.lookup(bucket, key)
	if err != nil {
		return nil, err
	}
	return &gofakes3.Object{Name: key, Metadata: o.meta, Size: o.size, Hash: o.md5, Contents: io.NopCloser(bytes.NewReader(nil))}, nil
}

func (s *objectStore) GetObject(bucket, key string, rangeRequest *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, err := s.lookup(bucket, key)
	if err != nil {
		return nil, err
	}
	rng, err := rangeRequest.Range(o.size)
	if err != nil {
		return nil, err
	}
	start, length := int64(0), o.size
	if rng != nil {
		start, length = rng.Start, rng.Length
	}
	obj := &gofakes3.Object{Name: key, Metadata: o.meta, Size: o.size, Hash: o.md5, Range: rng}
	if o.path == "" {
		obj.Contents = io.NopCloser(bytes.NewReader(o.body[start : start+length]))
		return obj, nil
	}
	// The file is opened under the lock, so a delete or overwrite after it (which
	// removes the file) does not take the body from this reader.
	f, err := os.Open(o.path)
	if err != nil {
		return nil, fmt.Errorf("S3 emulator: body of %s/%s: %w", bucket, key, err)
	}
	obj.Contents = sectionCloser{io.NewSectionReader(f, start, length), f}
	return obj, nil
}

// sectionCloser reads a part of a body file and closes the file.
type sectionCloser struct {
	*io.SectionReader
	f *os.File
}

func (c sectionCloser) Close() error { return c.f.Close() }

// bucket returns the bucket named name, or gofakes3's NoSuchBucket. The caller holds s.mu.
func (s *objectStore) bucket(name string) (*objectBucket, error) {
	b := s.buckets[name]
	if b == nil {
		return nil, gofakes3.BucketNotFound(name)
	}
	return b, nil
}

func (s *objectStore) lookup(bucket, key string) (*storedObject, error) {
	b, err := s.bucket(bucket)
	if err != nil {
		return nil, err
	}
	o := b.objects[key]
	if o == nil {
		return nil, gofakes3.KeyNotFound(key)
	}
	return o, nil
}

func (s *objectStore) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, conditions *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	body, err := gofakes3.ReadAll(input, size)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	sum := md5.Sum(body)
	o := &storedObject{size: int64(len(body)), md5: sum[:], meta: maps.Clone(meta)}
	if s.dir == "" {
		o.body = body
	} else {
		// Written before the lock is taken, under a name of its own: a put that loses
		// its condition removes its file.
		o.path = filepath.Join(s.dir, strconv.FormatUint(s.seq.Add(1), 36))
		if err := os.WriteFile(o.path, body, 0o644); err != nil {
			return gofakes3.PutObjectResult{}, fmt.Errorf("S3 emulator: store %s/%s: %w", bucket, key, err)
		}
	}
	if err := s.put(bucket, key, o, conditions); err != nil {
		s.drop(o)
		return gofakes3.PutObjectResult{}, err
	}
	return gofakes3.PutObjectResult{}, nil
}

// put stores o at key if conditions hold, replacing what was there.
func (s *objectStore) put(bucket, key string, o *storedObject, conditions *gofakes3.PutConditions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.bucket(bucket)
	if err != nil {
		return err
	}
	old := b.objects[key]
	if conditions != nil {
		info := &gofakes3.ConditionalObjectInfo{Exists: old != nil}
		if old != nil {
			info.Hash = old.md5
		}
		if err := gofakes3.CheckPutConditions(conditions, info); err != nil {
			return err
		}
	}
	o.modified = s.now()
	if old != nil {
		s.drop(old)
	} else {
		i := sort.SearchStrings(b.keys, key)
		b.keys = slices.Insert(b.keys, i, key)
	}
	b.objects[key] = o
	return nil
}

// drop removes o's body file, if it has one. Readers that opened it keep reading it.
func (s *objectStore) drop(o *storedObject) {
	if o.path != "" {
		_ = os.Remove(o.path)
	}
}

func (s *objectStore) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.bucket(bucket)
	if err != nil {
		return gofakes3.ObjectDeleteResult{}, err
	}
	s.remove(b, key)
	return gofakes3.ObjectDeleteResult{}, nil
}

// remove deletes key from b; a missing key is no error, as in S3.
func (s *objectStore) remove(b *objectBucket, key string) {
	o := b.objects[key]
	if o == nil {
		return
	}
	s.drop(o)
	delete(b.objects, key)
	if i, ok := slices.BinarySearch(b.keys, key); ok {
		b.keys = slices.Delete(b.keys, i, i+1)
	}
}

func (s *objectStore) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.bucket(bucket)
	if err != nil {
		return gofakes3.MultiDeleteResult{}, err
	}
	var out gofakes3.MultiDeleteResult
	for _, k := range keys {
		s.remove(b, k)
		out.Deleted = append(out.Deleted, gofakes3.ObjectID{Key: k})
	}
	return out, nil
}

func (s *objectStore) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObject(s, srcBucket, srcKey, dstBucket, dstKey, meta)
}
