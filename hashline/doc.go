// Package hashline is the pure core of anchored file editing: it cuts content
// into numbered lines, gives each line a short content hash (its anchor),
// renders lines for a reader, and turns edits addressed by line number and
// anchor into a plan that applies to exactly one content.
//
// # What it owns
//
//   - Anchors: AnchorOf is the first 8 lowercase hex digits of FNV-1a 64
//     over a line's bytes. It depends on the line's text alone, so an edit
//     elsewhere never changes a line's anchor, only perhaps its number;
//     that is why a Ref carries both and both are checked.
//   - Digests: Digest is the full FNV-1a 64 hash plus the byte length of a
//     content. A plan is bound to one digest.
//   - Reading: Annotate, Window, RenderLine and RenderLines produce the
//     "N:anchor|text" display form; HasDisplayPrefix recognises it, so a
//     hunk that pastes display text instead of file text is refused.
//     ViewOf renders one byte-bounded window straight from the content
//     (an over-long first line cut, keeping its whole-line anchor),
//     RenderRegionsOf renders regions the same way and LineCount counts
//     lines: none of them annotates the content whole, so what they cost
//     follows what they show, not how many lines the content has.
//   - Editing: DecodeHunks and ValidateHunks check hunks without the
//     content; NewPlan checks them against it (overlaps, stale refs);
//     Plan.Apply produces the post-image, its digest, its line count and
//     the region each hunk landed on, annotating nothing; RenderRegionsOf
//     renders those regions with context, merged and capped, annotating
//     only the lines it shows.
//
// # What it refuses to own
//
// No I/O, no paths, no policy, no clocks, no global state: callers read and
// write files and decide what a model sees. Errors are values with stable
// codes (the Code* constants) and messages a model can act on; no input,
// however malformed, makes the package panic.
//
// # Invariants
//
//   - Annotate then joining each line's text with its own line break (and
//     the byte-order mark, if any) reproduces the content exactly. A final
//     line break starts no extra line; empty content has no lines.
//   - A Plan applies to the content it was made from and is refused
//     (CodeStaleDigest) on every other, so re-applying a plan to its own
//     result never applies it twice; it succeeds again only when the edit
//     left the content byte-identical. Per-line anchors alone could not
//     promise this: after a deletion an identical neighbour can slide into
//     the removed line's number with the same anchor.
//   - Apply keeps the bytes of every line it does not remove, each line's
//     own LF or CRLF, a byte-order mark, and a missing final line break;
//     written lines take the dominant line break. It runs in time linear in
//     the content plus the hunks.
//   - ViewOf(content, offset, limit, 0) is Window(Annotate(content),
//     offset, limit), and RenderRegionsOf(content, ...) is
//     RenderRegions(Annotate(content), ...), byte for byte.
//   - Applied.LineCount is LineCount(Applied.Content), and the fresh
//     anchors RenderRegionsOf renders from Applied.Content are
//     byte-identical to what a new read would show.
package hashline
