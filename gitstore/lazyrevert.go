package gitstore

// Reading fewer versions. An undo follows the commit's lines through every
// later version of the file, one change at a time, and each version is
// read from the repository. Most of those changes never come near the
// commit's lines: a stretch of versions whose change seen at once removes
// none of the lines the undo follows (the commit's, and those written in
// their place) and moves none of its markers is followed at once, with the
// same result as one by one, and only its last version is read. A stretch
// whose change at once does touch them is cut in two, down to single
// versions where it must: the versions read are those around the changes
// that touched the commit's lines, a few per such change, not every one.
//
// Seen at once, a line one version of the stretch removed and a later one
// wrote back as it was has never left; followed one by one, it had (and a
// commit's line so touched would be a conflict). The first look at once,
// from the commit's version to the one now, sees it so already.

// laterFiles are the versions of a file after a commit, oldest first,
// read only when the undo asks for one.
type laterFiles interface {
	Len() int
	// At is version i (0 ≤ i < Len); ok false for one that is not lines
	// of text, which the undo leaves out.
	At(i int) (v FileText, ok bool, err error)
}

// revertThrough is revertLines through the versions of later, read as
// needed, and then the file now (current).
func revertThrough(base, target fileLines, later laterFiles, current fileLines) (lineRevert, error) {
	r := startRevert(base, target)
	prev := target
	if later != nil && later.Len() > 0 {
		read := map[int]fileLines{} // each version split once
		at := func(i int) (fileLines, bool, error) {
			if v, ok := read[i]; ok {
				return v, true, nil
			}
			v, ok, err := later.At(i)
			if err != nil || !ok {
				return fileLines{}, false, err
			}
			read[i] = splitLines(v.Data, v.Exists)
			return read[i], true, nil
		}
		var err error
		if prev, err = r.through(prev, 0, later.Len(), at); err != nil {
			return r, err
		}
	}
	r.follow(prev.lines, current.lines)
	r.current = current
	r.decide()
	r.parts = r.render()
	return r, nil
}

// through follows the versions lo..hi-1 (read by at) after prev, the
// version followed last, and returns the last one it followed: the
// stretch at once where that is exact (atOnce), else its two halves in
// turn, down to single versions.
func (r *lineRevert) through(prev fileLines, lo, hi int, at func(int) (fileLines, bool, error)) (fileLines, error) {
	for lo < hi {
		v, ok, err := at(hi - 1)
		if err != nil {
			return prev, err
		}
		if !ok {
			hi-- // not lines of text: left out
			continue
		}
		hs := lineHunksWith(r.ids, prev.lines, v.lines)
		if hi-1 == lo || r.atOnce(hs) {
			r.apply(prev.lines, hs, v.lines)
			r.current = v
			return v, nil
		}
		mid := lo + (hi-lo)/2
		if prev, err = r.through(prev, lo, mid, at); err != nil {
			return prev, err
		}
		lo = mid
	}
	return prev, nil
}

// atOnce says the change hs, from the version followed last, leaves the
// lines the undo follows alone: it removes no line of the commit's nor
// any written in place of one, and changes nothing next to a marker (a
// line written there may stand before or after the marker, depending on
// the changes one by one).
func (r *lineRevert) atOnce(hs []hunk) bool {
	line, k := 0, 0 // the line of the version followed last, and the first hunk not before it
	for _, e := range r.seq {
		for k < len(hs) && hs[k].aj < line {
			k++
		}
		if k == len(hs) {
			return true
		}
		h := hs[k]
		if e.marker {
			if h.ai <= line { // and line <= h.aj: at or in the change
				return false
			}
			continue
		}
		if e.hunk >= 0 && h.ai <= line && line < h.aj {
			return false
		}
		line++
	}
	return true
}
