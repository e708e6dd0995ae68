package diff

// EncodeE4M3 exposes the fast encoder to the tests.
var EncodeE4M3 = encodeE4M3
