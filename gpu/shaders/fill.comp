// out[i] = value for i < n. Also the cheapest useful dispatch, which the
// transfer benchmark uses to measure per-dispatch overhead.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) writeonly buffer Out { float dst[]; };

layout(push_constant) uniform Push {
    float value;
    uint n;
} pc;

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n)
        dst[i] = pc.value;
}
