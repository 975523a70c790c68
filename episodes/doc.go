// Package episodes serves windows over episodes of moments: the "rows" and
// "video" materializer kinds of package mix, the episode index they share,
// the cache of media indexes, and the check that refuses video rows at
// write time.
//
// An episode is a maximal run of consecutive row ordinals with one value
// of the table's episode column: the column the schema metadata
// weft.episode names, else a column named episode_index, else episode.
// The episode index of a table version (EpisodeIndex) holds the first row
// of each episode, so its memory grows with the number of episodes, not
// rows; it is built once per manifest and column and cached.
//
// A video column is a column of type struct<media: utf8, time: float64>
// whose field metadata has weft.kind = "video": media is the sha256 hex of
// an MP4 media object of the column's project, time the presentation time
// in seconds of the moment's frame, which video.Index.FrameAt resolves
// within the field's weft.tolerance (default 0.0001 s).
//
// # Window specs
//
// A window {"kind": "rows", "offsets": [k…], "pad": bool} serves, per
// sample, the key column's values at rows row+k clamped into the sample's
// episode, as K (fixed_size_list<X>[T]) and K_is_pad
// (fixed_size_list<bool>[T], true where clamped). With pad false nothing
// repeats: a window that would cross an episode edge slides to lie inside
// the episode (all of K_is_pad false), and an episode shorter than the
// window's span is refused when the run is resolved, naming it.
//
// A window {"kind": "video", "frames": [k…]} or {"kind": "video",
// "seconds": [s…]}, with optional "size": [H, W], "pad" and "tolerance",
// serves per sample the frames at display offsets k from the moment's
// frame (or the frames nearest to time + s), clamped into the episode's
// frame span (the frames of its first and last moments), as K_is_pad and
// K, a struct of the frames' PTS, the step-global index of the segment
// that decodes each, and the segments the sample introduces: the decoder
// configuration and the access units, read from the bucket by ranged
// reads, that a decoder needs (video.Index.PlanWindows over the step's
// samples of each media object, so a GOP that several windows share is
// sent once). With pad false a frames window slides inside the episode
// like a rows window (an episode too short for it fails its step), and a
// seconds window must not reach past the episode's edges. Canonical turns a spec into the form the run record and
// run id hold. WindowType and SegmentType are the video window's wire
// layout (VIDEO-CONTRACT section 5); ReadWindows reads a column of it
// back, typed and checked once (the cuda-ipc delivery of package flight
// decodes from it), so the layout is written and read in this package
// only.
//
// # Concurrency
//
// Kinds, their materializers and the check are safe for concurrent use.
// Prefetch never blocks: it starts the step's work with mix.Loads.Go and
// the step's reads are started from there. Errors (a media object that is
// not in the bucket: NotFound; one that is not an indexable MP4, a time
// with no frame, a window that crosses its episode with pad false:
// InvalidArgument) name the row, the media object and what to do, and
// surface from Build.
package episodes
