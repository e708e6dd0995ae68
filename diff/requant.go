package diff

import (
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Block FP8 against a wider float is re-quantised with every recipe that
// stores the FP8 side's kind of scale (numfmt.FP8Recipes, Stores): the
// first of them, the counting recipe (ckpt's for F32/BF16/F16 scales,
// transformers-ue8m0's for F8_E8M0), on every block, which gives the
// row's mismatch counts; each other recipe only while it still reproduces
// every block of its chunk, its scale checked first (one comparison a
// block, so that on a fine-tune, where the scales moved, the others stop
// at their first block). A recipe whose scale and operation are another's
// (numfmt.FP8Block.Same) takes that one's count. The row is
// requant_identical under the first recipe that reproduced every code and
// scale, and names it (requant_recipe); otherwise its counts are the
// counting recipe's, which it names.

// maxFP8Recipes bounds the recipes a side is re-quantised with (bits of
// partial.qDead).
const maxFP8Recipes = 16

// recipesFor returns the recipes that store scales of dtype sd for a
// block-FP8 weight_scale_inv (ct false) or a compressed-tensors
// weight_scale (ct true), the counting recipe first.
func recipesFor(sd numfmt.DType, ct bool) []numfmt.FP8Recipe {
	var out []numfmt.FP8Recipe
	for _, r := range numfmt.FP8Recipes {
		if r.Stores(sd, ct) && len(out) < maxFP8Recipes {
			out = append(out, r)
		}
	}
	return out
}

// storedOp is how the counting recipe makes codes under the stored scale
// s (its scale when the block re-quantises): division by s (a zero scale:
// zero codes), or for transformers-ue8m0 multiplication by 1/s.
func (q *side) storedOp(s float32) numfmt.FP8Block {
	if len(q.recipes) > 0 && q.recipes[0] == numfmt.FP8TransformersUE8M0 {
		return numfmt.FP8Block{Scale: s, K: 1 / s, Mul: true}
	}
	return numfmt.FP8Block{Scale: s, K: s, Zero: s == 0}
}

// requantBlock applies the counting recipe to one block of wide-side
// values w and compares the result with the FP8 side's codes and its
// stored scale for block (bi, bj): it returns how many codes differ and
// whether the scale differs, and adds to dead the other recipes (bit i:
// q.recipes[i+1]) that fail the block. Codes and scales are compared by
// decoded value (numfmt.SameE4M3): zeroSign counts the codes that differ
// only in the sign of zero, which are not mismatches.
func requantBlock(q *side, w []float32, codes []byte, bi, bj int64, dead uint16) (cnt, zeroSign int64, scaleDiffers bool, deadOut uint16) {
	amax := numfmt.AbsMax(w)
	stored := q.scale[bi*q.sCols+bj]
	codes = codes[:len(w)]
	b0 := q.recipes[0].Block(amax, q.scaleDType)
	scaleDiffers = !sameValue(b0.Scale, stored)
	cnt, zeroSign = b0.Mismatches(w, codes)
	dead = q.otherRecipes(amax, stored, dead, []opCount{{b0, cnt}}, func(b numfmt.FP8Block) int64 {
		c, _ := b.Mismatches(w, codes)
		return c
	})
	return cnt, zeroSign, scaleDiffers, dead
}

// opCount is a code operation already counted on a block.
type opCount struct {
	b   numfmt.FP8Block
	cnt int64
}

// otherRecipes returns dead with the bits added of the other recipes that
// fail a block of absolute maximum amax and stored scale stored: a scale
// that is not the stored one, or codes that differ (count: the mismatching
// codes of an operation, from known when one there is the same).
func (q *side) otherRecipes(amax, stored float32, dead uint16, known []opCount, count func(numfmt.FP8Block) int64) uint16 {
	for i, r := range q.recipes[1:] {
		bit := uint16(1) << i
		if dead&bit != 0 {
			continue
		}
		b := r.Block(amax, q.scaleDType)
		if !sameValue(b.Scale, stored) {
			dead |= bit
			continue
		}
		c := int64(-1)
		for _, k := range known {
			if k.b.Same(b) {
				c = k.cnt
				break
			}
		}
		if c < 0 {
			c = count(b)
			known = append(known, opCount{b, c})
		}
		if c > 0 {
			dead |= bit
		}
	}
	return dead
}

// requantRecipe sets the row's recipe and relation from the totals: the
// counting recipe when it reproduced everything (or no other did: its
// counts are the row's), else the first other recipe alive.
func requantRecipe(row *Tensor, q *side, qe, qb *int64, dead uint16, sampled bool) {
	if sampled || len(q.recipes) == 0 {
		return // a sample checks codes under the stored scales only
	}
	row.RequantRecipe = q.recipes[0].String()
	if *qe == 0 && *qb == 0 {
		return
	}
	for i, r := range q.recipes[1:] {
		if dead&(1<<i) == 0 {
			row.RequantRecipe = r.String()
			*qe, *qb = 0, 0
			return
		}
	}
}

// someRecipeScale reports whether one of the side's recipes gives the
// stored scale to a block of absolute maximum amax.
func (q *side) someRecipeScale(amax, stored float32) bool {
	for _, r := range q.recipes {
		if sameValue(r.Block(amax, q.scaleDType).Scale, stored) {
			return true
		}
	}
	return false
}
