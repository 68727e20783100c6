// Box blur through a texture reference (CUDA <= 11 style): the image is bound as a pitched 2-D texture.
#include <cuda_runtime.h>

texture<float, 2, cudaReadModeElementType> texImage;

__global__ void box_blur(float *out, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    float sum = 0.0f;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            sum += tex2D(texImage, x + dx + 0.5f, y + dy + 0.5f);
    out[y * width + x] = sum / 9.0f;
}

cudaError_t blur(const float *d_img, size_t pitch, float *d_out, int width, int height)
{
    texImage.addressMode[0] = cudaAddressModeClamp;
    texImage.addressMode[1] = cudaAddressModeClamp;
    texImage.filterMode = cudaFilterModePoint;
    cudaError_t err = cudaBindTexture2D(0, texImage, d_img, texImage.channelDesc, width, height, pitch);
    if (err != cudaSuccess)
        return err;
    dim3 block(16, 16), grid((width + 15) / 16, (height + 15) / 16);
    box_blur<<<grid, block>>>(d_out, width, height);
    err = cudaDeviceSynchronize();
    cudaUnbindTexture(texImage);
    return err;
}
