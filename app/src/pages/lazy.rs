//! The pages a triage view's first load does not carry: each is its own
//! wasm chunk (Leptos's `#[lazy_route]`, split out by `scripts/build-site.sh`)
//! that the browser fetches when a person first opens the page (the sign-in
//! form works before its chunk arrives: it is a plain form post). Their
//! server functions stay in the main module; only the views move.

use leptos::prelude::*;
use leptos_router::{lazy_route, LazyRoute};

use super::{
    InventoryPage, MembersPage, PacksPage, RecordSetsPage, SetPasswordPage, SettingsPage,
    SignInPage, SpendPage,
};

/// Declares a route whose view is loaded lazily and needs no data of its own
/// before it renders (each page reads its data itself).
macro_rules! lazy_page {
    ($route:ident, $page:ident) => {
        #[doc = concat!("The `", stringify!($page), "`, loaded when first opened.")]
        pub struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            fn view(_this: Self) -> AnyView {
                view! { <$page/> }.into_any()
            }
        }
    };
}

lazy_page!(InventoryRoute, InventoryPage);
lazy_page!(PacksRoute, PacksPage);
lazy_page!(SpendRoute, SpendPage);
lazy_page!(MembersRoute, MembersPage);
lazy_page!(SettingsRoute, SettingsPage);
lazy_page!(SetPasswordRoute, SetPasswordPage);
lazy_page!(RecordSetsRoute, RecordSetsPage);
lazy_page!(SignInRoute, SignInPage);
