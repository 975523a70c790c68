#!/bin/sh
# Makes the demo's synthetic wrist-camera episodes (checked in; the demo
# itself never runs ffmpeg). Run from this directory with ffmpeg 5.1+:
#   sh make-demo-clips.sh
# Each clip: 96x96, 30 fps, 3 s (90 frames), H.264 High, GOP 30 with
# B-frames, yuv420p, single-threaded x264 (reproducible). A red object sits
# on the table; two gray fingers close on it (0-1.5 s) and lift (1.5-3 s).
# In nominal grasps the object rises with the fingers; in failed grasps it
# slips out and falls back.
set -eu
clip() { # name object_x slip
  name=$1 ox=$2 slip=$3
  lift="max(0,t-1.5)"
  close="min(t,1.5)/1.5"
  if [ "$slip" = 1 ]; then
    oy="60-22*$lift+min(60,40*max(0,t-2)*max(0,t-2)*4)"
    oy="min(60,$oy)"
  else
    oy="60-22*$lift"
  fi
  ffmpeg -hide_banner -loglevel error \
    -f lavfi -i "color=c=0x303840:size=96x96:rate=30" \
    -f lavfi -i "color=c=0xd02020:size=16x16:rate=30" \
    -f lavfi -i "color=c=0xa8a8a8:size=9x44:rate=30" \
    -filter_complex "[0][1]overlay=x=$ox:y='$oy'[a];[a][2]overlay=x='2+($ox-11)*$close':y='30-22*$lift'[b];[b][2]overlay=x='85-(85-$ox-18)*$close':y='30-22*$lift'" \
    -t 3 -c:v libx264 -profile:v high -g 30 -bf 2 -crf 30 -pix_fmt yuv420p \
    -threads 1 -x264-params threads=1 -map_metadata -1 -fflags +bitexact -y "$name.mp4"
}
i=0
for ox in 24 34 44 54; do clip failed_$i $ox 1; i=$((i+1)); done
i=0
for ox in 20 26 32 38 44 50 56 62; do clip nominal_$i $ox 0; i=$((i+1)); done
