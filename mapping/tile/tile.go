package tile

// Tile geometry.
const (
	TileDim   = 32                // tile height and width
	FaceDim   = 16                // face height and width
	TileElems = TileDim * TileDim // values per tile
	FaceRows  = 64                // face rows per tile (4 faces x 16 rows)
)

// FaceRowOrigin returns the (row, col) inside a tile where face row r starts.
func FaceRowOrigin(r int) (row, col int) {
	face := r / FaceDim
	return (face/2)*FaceDim + r%FaceDim, (face % 2) * FaceDim
}
