// A launcher that launches nothing: what the cases compile against.
struct Buffer<T>(Vec<T>);

struct Mock;

impl gpu::launch::Launcher for Mock {
    type Buffer<T: 'static> = Buffer<T>;
    type Error = String;

    fn address<T: 'static>(buffer: &Buffer<T>) -> (u64, usize) {
        (buffer.0.as_ptr() as u64, buffer.0.len())
    }

    unsafe fn launch_with(
        &self,
        _: &'static gpu::launch::Kernel,
        _: gpu::launch::Dim3,
        _: gpu::launch::Dim3,
        _: u32,
        _: &[gpu::launch::Arg],
    ) -> Result<(), String> {
        Ok(())
    }
}
