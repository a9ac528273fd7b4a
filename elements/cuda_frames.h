// NVDEC's frames into Vulkan memory on the same GPU, never through the host:
// CUDA copies each frame's planes, device to device, into exportable Vulkan
// memory it imported (CUDA external memory, an opaque fd), once per
// allocation. libcuda is opened at run time, so reel builds and runs
// without it; where any part is missing, open says why and the decoder
// reads frames back through host memory instead (reported).
// Only elements/decode.c includes this.
#ifndef REEL_ELEMENTS_CUDA_FRAMES_H
#define REEL_ELEMENTS_CUDA_FRAMES_H

#include <libavutil/buffer.h>
#include <libavutil/frame.h>

#include "reel/reel.h"

typedef struct cuda_frames cuda_frames;

// For frames of the CUDA hardware device hw_device (FFmpeg's
// AVHWDeviceContext) going to dev; NULL with *why set (g_free it) when the
// two are not one GPU, dev cannot export memory or there is no libcuda.
cuda_frames *cuda_frames_open(reel_device *dev, AVBufferRef *hw_device, char **why);

// A CUDA frame (AV_PIX_FMT_CUDA) as a packed device buffer of format f
// (the frame's software format and size); NULL with *why set.
reel_buffer *cuda_frames_copy(cuda_frames *c, const reel_caps *f, const AVFrame *frame, char **why);

void cuda_frames_close(cuda_frames **c);

#endif
