//! Parts of the triage view that the browser fetches when first used (wasm
//! chunks), drawn so that a failed fetch is a message, not a crash: Leptos's
//! `#[lazy]` panics when its chunk cannot be loaded, and a panic in wasm
//! stops every chip on the page. The next use fetches the chunk again.

/// What a part of the page says when its code could not be fetched.
pub const NOT_LOADED: &str =
    "This part of the page could not be loaded (is the network down?). Try again.";

/// `async fn $name(args) -> Result<AnyView, SplitLoaderError>` whose body is
/// a chunk of its own named `$chunk`, fetched at the first call; `Err` when
/// the fetch fails. On the server the body runs as it is and is always `Ok`.
macro_rules! lazy_view {
    (
        $(#[$doc:meta])*
        $chunk:ident: $vis:vis async fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block
    ) => {
        $(#[$doc])*
        #[cfg(feature = "hydrate")]
        #[::leptos::wasm_split::wasm_split(
            $chunk,
            wasm_split_path = ::leptos::wasm_split,
            fallible,
            return_wrapper(
                let drawing = _;
                { Ok(drawing.await) }
                -> ::std::result::Result<::leptos::prelude::AnyView, ::leptos::wasm_split::SplitLoaderError>
            )
        )]
        $vis fn $name(
            $($arg: $ty),*
        ) -> ::std::pin::Pin<
            ::std::boxed::Box<
                dyn ::std::future::Future<Output = ::leptos::prelude::AnyView>
                    + ::std::marker::Send
                    + ::std::marker::Sync,
            >,
        > {
            ::std::boxed::Box::pin(::send_wrapper::SendWrapper::new(async move $body))
        }

        $(#[$doc])*
        #[cfg(not(feature = "hydrate"))]
        $vis async fn $name(
            $($arg: $ty),*
        ) -> ::std::result::Result<::leptos::prelude::AnyView, ::leptos::wasm_split::SplitLoaderError> {
            Ok(async move $body.await)
        }
    };
}

pub(crate) use lazy_view;
