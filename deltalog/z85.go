package deltalog

import "fmt"

// Z85 is the Base85 variant the protocol uses for inline deletion vectors and the UUIDs
// of on-disk ones (docs/delta-reading.md § Deletion vectors; ZeroMQ RFC 32): every
// 4 bytes, read as a big-endian uint32, become 5 characters of z85Alphabet, most
// significant first.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

var z85Values = func() (v [256]byte) {
	for i := range v {
		v[i] = 0xFF
	}
	for i := range len(z85Alphabet) {
		v[z85Alphabet[i]] = byte(i)
	}
	return v
}()

// z85Encode encodes data, zero-padded to a multiple of 4 bytes (as Spark pads an inline
// deletion vector; the descriptor's sizeInBytes says how many bytes are real).
func z85Encode(data []byte) string {
	padded := data
	if r := len(data) % 4; r != 0 {
		padded = append(append([]byte(nil), data...), make([]byte, 4-r)...)
	}
	out := make([]byte, 0, len(padded)/4*5)
	for i := 0; i < len(padded); i += 4 {
		v := uint32(padded[i])<<24 | uint32(padded[i+1])<<16 | uint32(padded[i+2])<<8 | uint32(padded[i+3])
		var chunk [5]byte
		for j := 4; j >= 0; j-- {
			chunk[j] = z85Alphabet[v%85]
			v /= 85
		}
		out = append(out, chunk[:]...)
	}
	return string(out)
}

// z85Decode decodes s, whose length must be a multiple of 5.
func z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := range 5 {
			d := z85Values[s[i+j]]
			if d == 0xFF {
				return nil, fmt.Errorf("z85: byte %q at %d is not in the alphabet", s[i+j], i+j)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85: group at %d overflows 32 bits", i)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}
