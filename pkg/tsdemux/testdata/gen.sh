#!/bin/sh
# Regenerates the committed test clips (ffmpeg 5.1 with libx264/libx265).
# They are committed so the tests stay fast and the fuzz corpus has real seeds.
set -eu
cd "$(dirname "$0")"
common="-hide_banner -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=25"
x264="-c:v libx264 -preset ultrafast -pix_fmt yuv420p -g 30 -b:v 150k"
# 2 s, no B-frames, GOP 30: 50 pictures, IDRs at 0 and 30.
ffmpeg $common -t 2 $x264 -bf 0 -f mpegts h264.ts
# 1 s with B-frames: must be refused.
ffmpeg $common -t 1 $x264 -preset fast -bf 2 -f mpegts h264_bframes.ts
# 1 s with x264's default 3 B-frames and B-pyramid: some B-frames have PTS = DTS.
ffmpeg $common -t 1 $x264 -preset fast -bf 3 -f mpegts h264_bpyramid.ts
# 1 s H.264 + AAC: video passes, one warning.
ffmpeg $common -f lavfi -i sine=frequency=440:sample_rate=48000 -t 1 $x264 -bf 0 -c:a aac -b:a 32k -f mpegts h264_aac.ts
# 1 s H.265 + AAC with B-frames (x265's default): refused with video: passthrough, transcoded with auto.
ffmpeg $common -f lavfi -i sine=frequency=440:sample_rate=48000 -t 1 -c:v libx265 -preset ultrafast -x265-params log-level=error -b:v 100k -c:a aac -b:a 32k -f mpegts h265_aac.ts
# 2 s H.265 without B-frames, GOP 30: 50 pictures, IRAPs at 0 and 30 (passthrough).
ffmpeg $common -t 2 -c:v libx265 -preset ultrafast -pix_fmt yuv420p -x265-params log-level=error:bframes=0:keyint=30:min-keyint=30:scenecut=0 -b:v 100k -f mpegts h265.ts
