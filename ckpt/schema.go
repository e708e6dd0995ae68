package ckpt

// SchemaVersion is the version of every JSON document the ckpt commands
// print (the "schema_version" key at the top of each document and of
// every JSON Lines summary record). It changes when a key is renamed or
// removed or its meaning changes; adding a key does not change it.
const SchemaVersion = 1
