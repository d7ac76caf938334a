package parquetio

import (
	"crypto/rand"
	"fmt"
)

// fileName is a data file name as Spark writes them,
// part-<part:05>-<uuid>-c000.<codec>.parquet, with a fresh random (version 4) UUID: unique per
// attempt, so a retried write never reuses a name (docs/reference/delta-protocol.md §1.2: file
// names must be unique and never overwritten).
func fileName(part int, codec Codec) string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("part-%05d-%x-%x-%x-%x-%x-c000.%s.parquet", part, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16], codec)
}
