#!/usr/bin/env python3
"""A real RTSP server on 127.0.0.1 for the live tests: GStreamer's
gst-rtsp-server serving a live test pattern as H.264 at /test.

Usage: rtsp_server.py PORT [--protocols tcp|udp|any] [--frames N]
           [--size WxH] [--fps N]

Prints "ready" on standard output once it listens. With --frames the
stream ends (RTCP BYE) after N frames; without, it runs until killed."""
import argparse
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402

PROTOCOLS = {
    "tcp": GstRtsp.RTSPLowerTrans.TCP,
    "udp": GstRtsp.RTSPLowerTrans.UDP,
    "any": GstRtsp.RTSPLowerTrans.TCP | GstRtsp.RTSPLowerTrans.UDP,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--protocols", choices=PROTOCOLS, default="any")
    ap.add_argument("--frames", type=int, default=-1)
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--fps", type=int, default=25)
    args = ap.parse_args()
    width, height = args.size.split("x")

    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    factory = GstRtspServer.RTSPMediaFactory()
    # One keyframe a second, no B-frames: a client joining or rejoining
    # decodes within a second.
    factory.set_launch(
        f"( videotestsrc is-live=true num-buffers={args.frames} "
        f"! video/x-raw,format=I420,width={width},height={height},framerate={args.fps}/1 "
        f"! x264enc tune=zerolatency speed-preset=ultrafast key-int-max={args.fps} bframes=0 "
        f"! video/x-h264,profile=baseline ! rtph264pay name=pay0 pt=96 config-interval=1 )")
    factory.set_protocols(PROTOCOLS[args.protocols])
    factory.set_shared(True)
    server.get_mount_points().add_factory("/test", factory)
    if server.attach(None) == 0:
        sys.exit(f"cannot listen on 127.0.0.1:{args.port}")
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
