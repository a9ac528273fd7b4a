// NVDEC's frames into Vulkan memory on the same GPU, and Vulkan frames into
// NVENC's, never through the host: CUDA copies each frame's planes, device
// to device, between its own frames and exportable Vulkan memory it imported
// (CUDA external memory, an opaque fd), once per allocation. libcuda is
// opened at run time, so reel builds and runs without it; where any part is
// missing, open says why and the decoder or encoder moves frames through
// host memory instead (reported).
// Only elements/decode.c and elements/encode.c include this.
#ifndef REEL_ELEMENTS_CUDA_FRAMES_H
#define REEL_ELEMENTS_CUDA_FRAMES_H

#include <libavutil/buffer.h>
#include <libavutil/frame.h>

#include "reel/reel.h"

typedef struct cuda_frames cuda_frames;

// Whether frames can go between CUDA and dev at all, checked before any
// CUDA device is made: dev is a Vulkan device that shares memory and
// libcuda is there. false with *why set (g_free it) when not.
bool cuda_frames_possible(reel_device *dev, char **why);

// For frames of the CUDA hardware device hw_device (FFmpeg's
// AVHWDeviceContext) going to dev; NULL with *why set (g_free it) when the
// two are not one GPU, dev cannot export memory or there is no libcuda.
cuda_frames *cuda_frames_open(reel_device *dev, AVBufferRef *hw_device, char **why);

// A CUDA frame (AV_PIX_FMT_CUDA) as a packed device buffer of format f
// (the frame's software format and size); NULL with *why set.
reel_buffer *cuda_frames_copy(cuda_frames *c, const reel_caps *f, const AVFrame *frame, char **why);

// The other way: device frame b (planes at b->offsets, rows b->strides
// apart, in memory of c's device) copied into CUDA frame dst
// (AV_PIX_FMT_CUDA, from a frames context of b's pixel format and size).
// Memory not made exportable is first copied on the GPU into memory that
// is. Waits for the device work that wrote b first, and returns once the
// copy is over: b may be reused at once. 0, or -1 with *why set.
int cuda_frames_to_cuda(cuda_frames *c, const reel_buffer *b, AVFrame *dst, char **why);

void cuda_frames_close(cuda_frames **c);

#endif
