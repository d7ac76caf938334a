package deltalog

import (
	"slices"
	"strings"
)

// The highest protocol versions this package implements (docs/reference/delta-protocol.md
// §6.1): reader version 3 and writer version 7 carry explicit feature lists.
const (
	maxReaderVersion = 3
	maxWriterVersion = 7
)

// Table feature names (docs/reference/delta-protocol.md §6.5).
const (
	FeatureAppendOnly          = "appendOnly"
	FeatureInvariants          = "invariants"
	FeatureCheckConstraints    = "checkConstraints"
	FeatureChangeDataFeed      = "changeDataFeed"
	FeatureGeneratedColumns    = "generatedColumns"
	FeatureColumnMapping       = "columnMapping"
	FeatureIdentityColumns     = "identityColumns"
	FeatureDeletionVectors     = "deletionVectors"
	FeatureTimestampNTZ        = "timestampNtz"
	FeatureDomainMetadata      = "domainMetadata"
	FeatureV2Checkpoint        = "v2Checkpoint"
	FeatureVacuumProtocolCheck = "vacuumProtocolCheck"
	FeatureAllowColumnDefaults = "allowColumnDefaults"
	FeatureRowTracking         = "rowTracking"
	FeatureInCommitTimestamp   = "inCommitTimestamp"
	FeatureClustering          = "clustering"
	FeatureTypeWidening        = "typeWidening"
	FeatureCatalogManaged      = "catalogManaged"
	FeatureVariantType         = "variantType"
	FeatureIcebergCompatV1     = "icebergCompatV1"
	FeatureIcebergCompatV2     = "icebergCompatV2"
	FeatureVariantShredding    = "variantShredding"
)

// readerFeatures are the reader features the log reader handles. v2Checkpoint: UUID-named
// checkpoints (JSON or Parquet) and their sidecars are read. deletionVectors: file
// identity includes the DV id and Scan never returns deleted rows. typeWidening: Scan
// converts a file's narrower column to the table's type, and CanReadData checks every
// recorded type change (widening.go). columnMapping is
// understood by the log (schemas keep their column-mapping metadata) but not by data
// scans: Snapshot.CanReadData refuses it when active. vacuumProtocolCheck only concerns
// VACUUM.
var readerFeatures = map[string]bool{
	FeatureV2Checkpoint:        true,
	FeatureTimestampNTZ:        true,
	FeatureDeletionVectors:     true,
	FeatureColumnMapping:       true,
	FeatureVacuumProtocolCheck: true,
	FeatureTypeWidening:        true,
}

// writerFeatures are the writer features a writer of appends can honour. Some are
// implemented by checking they are inactive (see inactiveWriterFeature); the others need
// nothing from an append-only writer: appendOnly forbids only removes with dataChange,
// changeDataFeed needs cdc files only for updates and deletes, domainMetadata needs
// domains kept (checkpoints keep them) and vacuumProtocolCheck a protocol check before
// VACUUM (CanWrite is that check). deletionVectors: Scan never returns a deleted row, a
// removed or re-added file keeps its DV (Add.RemoveAction), an add with a DV is checked at
// Commit (Add.WithDeletionVector), and VACUUM counts DV files as referenced; an appender
// writes no DV. typeWidening: SetSchema widens a column only with delta.enableTypeWidening
// and records the change in its delta.typeChanges, which later schema changes keep.
var writerFeatures = map[string]bool{
	FeatureDeletionVectors:     true,
	FeatureAppendOnly:          true,
	FeatureInvariants:          true,
	FeatureCheckConstraints:    true,
	FeatureChangeDataFeed:      true,
	FeatureGeneratedColumns:    true,
	FeatureIdentityColumns:     true,
	FeatureAllowColumnDefaults: true,
	FeatureTimestampNTZ:        true,
	FeatureDomainMetadata:      true,
	FeatureVacuumProtocolCheck: true,
	FeatureTypeWidening:        true,
}

// legacyWriterFeatures are the features each legacy writer version implies, cumulatively
// (docs/reference/delta-protocol.md §6.1).
var legacyWriterFeatures = [][]string{
	2: {FeatureAppendOnly, FeatureInvariants},
	3: {FeatureCheckConstraints},
	4: {FeatureChangeDataFeed, FeatureGeneratedColumns},
	5: {FeatureColumnMapping},
	6: {FeatureIdentityColumns},
}

// ReaderFeatureSet is the set of reader features the table needs: the explicit list at
// reader version 3, columnMapping at version 2, none below.
func (p Protocol) ReaderFeatureSet() []string {
	switch {
	case p.MinReaderVersion >= 3:
		return p.ReaderFeatures
	case p.MinReaderVersion == 2:
		return []string{FeatureColumnMapping}
	}
	return nil
}

// WriterFeatureSet is the set of writer features the table needs: the explicit list at
// writer version 7, else those the legacy version implies.
func (p Protocol) WriterFeatureSet() []string {
	if p.MinWriterVersion >= 7 {
		return p.WriterFeatures
	}
	var out []string
	for v := 2; v <= p.MinWriterVersion && v < len(legacyWriterFeatures); v++ {
		out = append(out, legacyWriterFeatures[v]...)
	}
	return out
}

// HasReaderFeature reports whether the protocol lists (or implies) the reader feature.
func (p Protocol) HasReaderFeature(name string) bool {
	return slices.Contains(p.ReaderFeatureSet(), name)
}

// HasWriterFeature reports whether the protocol lists (or implies) the writer feature.
func (p Protocol) HasWriterFeature(name string) bool {
	return slices.Contains(p.WriterFeatureSet(), name)
}

// CanRead checks that this package can read a table with protocol p
// (docs/reference/delta-protocol.md §6.2): every reader feature must be supported, then the
// reader version. It returns *UnsupportedFeatureError naming the first unsupported feature, or
// *UnsupportedVersionError.
func (p Protocol) CanRead() error {
	if p.MinReaderVersion >= 3 {
		for _, f := range p.ReaderFeatures {
			if !readerFeatures[f] {
				return &UnsupportedFeatureError{Feature: f, Reader: true}
			}
		}
	}
	if p.MinReaderVersion > maxReaderVersion {
		return &UnsupportedVersionError{Version: p.MinReaderVersion, Reader: true}
	}
	return nil
}

// CanWrite checks that this package can append to a table with protocol p and metadata m
// (docs/reference/delta-protocol.md §6.2: a writer implements every reader and writer
// feature). Refused with *UnsupportedFeatureError{Reader: false}: any feature not implemented,
// column mapping in any form, and invariants, CHECK constraints,
// generated, identity and default columns when the metadata uses them. Refused with
// *UnsupportedVersionError when minWriterVersion is above 7.
func CanWrite(p Protocol, m Metadata) error {
	if err := p.CanRead(); err != nil {
		return err
	}
	if p.MinWriterVersion > maxWriterVersion {
		return &UnsupportedVersionError{Version: p.MinWriterVersion}
	}
	for _, f := range p.ReaderFeatureSet() {
		if !writerFeatures[f] {
			return &UnsupportedFeatureError{Feature: f}
		}
	}
	for _, f := range p.WriterFeatureSet() {
		if !writerFeatures[f] {
			return &UnsupportedFeatureError{Feature: f}
		}
	}
	if f := activeWriterFeature(m); f != "" {
		return &UnsupportedFeatureError{Feature: f}
	}
	return nil
}

// activeWriterFeature returns a feature the metadata uses that an appender cannot honour
// (docs/reference/delta-protocol.md §6.6), or "". It is checked whatever the protocol says,
// since a property or column annotation is enough for Spark to enforce it.
func activeWriterFeature(m Metadata) string {
	for k, v := range m.Configuration {
		if strings.HasPrefix(k, "delta.constraints.") {
			return FeatureCheckConstraints
		}
		if k == "delta.columnMapping.mode" && v != "" && v != "none" {
			return FeatureColumnMapping
		}
	}
	e, err := parsedSchemas.of(m.SchemaString)
	if err != nil {
		return ""
	}
	return e.columnFeature
}

func activeColumnFeature(t DataType) string {
	switch t := t.(type) {
	case *StructType:
		for _, f := range t.Fields {
			for k := range f.Metadata {
				switch {
				case k == "delta.invariants":
					return FeatureInvariants
				case k == "delta.generationExpression":
					return FeatureGeneratedColumns
				case strings.HasPrefix(k, "delta.identity."):
					return FeatureIdentityColumns
				case k == "CURRENT_DEFAULT":
					return FeatureAllowColumnDefaults
				case strings.HasPrefix(k, "delta.columnMapping."):
					return FeatureColumnMapping
				}
			}
			if n := activeColumnFeature(f.Type); n != "" {
				return n
			}
		}
	case *ArrayType:
		return activeColumnFeature(t.ElementType)
	case *MapType:
		if n := activeColumnFeature(t.KeyType); n != "" {
			return n
		}
		return activeColumnFeature(t.ValueType)
	}
	return ""
}

// ProtocolFor is the lowest protocol for a new table with this schema
// (docs/reference/delta-protocol.md §6.4): reader 3 / writer 7 with timestampNtz in both
// feature lists when any column (at any depth) is timestamp_ntz, else reader 1 / writer 2.
func ProtocolFor(schema *StructType) Protocol {
	if schema.UsesType(TypeTimestampNTZ) {
		return Protocol{
			MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{FeatureTimestampNTZ},
			WriterFeatures: []string{FeatureTimestampNTZ},
		}
	}
	return Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
}

// UpgradeProtocol returns the protocol a table with protocol cur needs once its schema is
// schema, and whether it differs from cur. Moving a legacy table to reader 3 / writer 7 lists
// every feature its old versions implied (docs/reference/delta-protocol.md §6.3).
func UpgradeProtocol(cur Protocol, schema *StructType) (Protocol, bool) {
	if !schema.UsesType(TypeTimestampNTZ) || (cur.HasReaderFeature(FeatureTimestampNTZ) && cur.HasWriterFeature(FeatureTimestampNTZ)) {
		return cur, false
	}
	next := Protocol{MinReaderVersion: 3, MinWriterVersion: 7}
	next.ReaderFeatures = appendMissing(slices.Clone(cur.ReaderFeatureSet()), FeatureTimestampNTZ)
	next.WriterFeatures = appendMissing(slices.Clone(cur.WriterFeatureSet()), cur.ReaderFeatureSet()...)
	next.WriterFeatures = appendMissing(next.WriterFeatures, FeatureTimestampNTZ)
	return next, true
}

// readerWriterFeatures are the features listed in both readerFeatures and writerFeatures
// (docs/reference/delta-protocol.md §6.5); every other feature is writer-only.
var readerWriterFeatures = map[string]bool{
	FeatureColumnMapping: true, FeatureDeletionVectors: true, FeatureTimestampNTZ: true,
	FeatureV2Checkpoint: true, FeatureCatalogManaged: true, FeatureVacuumProtocolCheck: true,
	FeatureTypeWidening: true, FeatureVariantType: true, FeatureVariantShredding: true,
}

// withFeatures returns cur with the named features listed, at reader 3 / writer 7 (a
// legacy protocol's implied features listed explicitly, docs/reference/delta-protocol.md
// §6.3), and whether that differs from cur. A reader-writer feature goes in both lists, a
// writer-only one in writerFeatures; a protocol that lists a feature already keeps it.
func withFeatures(cur Protocol, names ...string) (Protocol, bool) {
	missing := false
	for _, n := range names {
		if !cur.HasWriterFeature(n) || (readerWriterFeatures[n] && !cur.HasReaderFeature(n)) {
			missing = true
		}
	}
	if !missing {
		return cur, false
	}
	next := Protocol{MinReaderVersion: cur.MinReaderVersion, MinWriterVersion: 7}
	next.WriterFeatures = appendMissing(slices.Clone(cur.WriterFeatureSet()), cur.ReaderFeatureSet()...)
	readers := slices.Clone(cur.ReaderFeatureSet())
	for _, n := range names {
		next.WriterFeatures = appendMissing(next.WriterFeatures, n)
		if readerWriterFeatures[n] {
			readers = appendMissing(readers, n)
		}
	}
	if len(readers) > 0 || cur.MinReaderVersion >= 3 {
		next.MinReaderVersion, next.ReaderFeatures = 3, readers
	} else if next.MinReaderVersion < 1 {
		next.MinReaderVersion = 1
	}
	return next, true
}

func appendMissing(list []string, names ...string) []string {
	for _, n := range names {
		if !slices.Contains(list, n) {
			list = append(list, n)
		}
	}
	return list
}
