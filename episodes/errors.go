package episodes

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
	"github.com/weftdata/weft/mix"
)

// Sentinels. Each wraps an errdefs kind; returned errors wrap one of these
// with the component, row, episode or media object at fault.
var (
	// ErrBadSpec: a window spec its kind refuses (unknown field, no
	// offsets, both frames and seconds, a bad size or tolerance), or a key
	// column of the wrong type. It is a mix.ErrBadWindow.
	ErrBadSpec = fmt.Errorf("%w: bad spec", mix.ErrBadWindow)
	// ErrNoEpisodes: the table has no episode column (schema metadata
	// weft.episode, a column episode_index or episode), or its episode
	// column is of a type or holds a value that cannot name an episode.
	ErrNoEpisodes = fmt.Errorf("%w: no episode column", errdefs.ErrInvalidArgument)
	// ErrPadding: with pad false, a window does not fit in its episode.
	ErrPadding = fmt.Errorf("%w: window does not fit in its episode", errdefs.ErrInvalidArgument)
	// ErrMediaNotFound: a row names a media object that is not in the
	// bucket.
	ErrMediaNotFound = fmt.Errorf("media %w", errdefs.ErrNotFound)
	// ErrBadMedia: a media object that is not an indexable MP4, or a row
	// whose time has no frame in it within tolerance, or a video column
	// value that is null.
	ErrBadMedia = fmt.Errorf("%w: bad video", errdefs.ErrInvalidArgument)
	// ErrMediaUnreadable: a media object in the bucket, which a committed
	// row names, is not an indexable MP4 (any more: it was checked at
	// upload, so it was damaged or replaced since). The request is fine
	// and the store is not this server's to mend, so the kind is failed
	// precondition; the message names the media object and what is wrong.
	ErrMediaUnreadable = fmt.Errorf("%w: stored media is not an indexable video", errdefs.ErrFailedPrecondition)
	// ErrNoMediaSource: the kinds were made without a MediaSource and the
	// engine's tables store cannot open media objects.
	ErrNoMediaSource = fmt.Errorf("no media source: %w", errdefs.ErrUnimplemented)
	// ErrTooLarge: one step's video segments do not fit one Arrow array
	// (over 2 GiB of access units); use more ranks or a smaller batch.
	ErrTooLarge = fmt.Errorf("%w: video segments of one step too large", mix.ErrBatchTooLarge)
	// ErrBadWindowColumn: ReadWindows was given an array that is not a
	// video window column as WindowType lays it out (another type, a null
	// the writer never writes, a frame naming a segment the rows do not
	// introduce).
	ErrBadWindowColumn = fmt.Errorf("%w: not a video window column", errdefs.ErrInvalidArgument)
)
