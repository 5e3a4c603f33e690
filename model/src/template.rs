//! The one reader of `{{...}}` templates (manifests' URLs, parameters,
//! headers and bodies): what each placeholder names, or where a template
//! breaks. Checking a manifest, filling a request and listing the secrets a
//! form needs all read templates here.

/// What a placeholder names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placeholder<'a> {
    /// `{{query}}`: the query the pack built for the record.
    Query,
    /// `{{max_results}}`: how many results the fire asks for.
    MaxResults,
    /// `{{record.<field>}}`: a field of the record (`name` included).
    Record(&'a str),
    /// `{{secret.<NAME>}}`: a workspace secret or server variable.
    Secret(&'a str),
    /// `{{$.path}}`: a JSONPath into one result (a manifest's `[response]`
    /// fields only).
    Item(&'a str),
    /// Anything else, as written (trimmed).
    Unknown(&'a str),
}

impl<'a> Placeholder<'a> {
    fn read(name: &'a str) -> Self {
        if name.starts_with('$') {
            return Placeholder::Item(name);
        }
        match name.split_once('.') {
            None if name == "query" => Placeholder::Query,
            None if name == "max_results" => Placeholder::MaxResults,
            Some(("record", field)) if !field.is_empty() => Placeholder::Record(field),
            Some(("secret", var)) if !var.is_empty() => Placeholder::Secret(var),
            _ => Placeholder::Unknown(name),
        }
    }
}

impl Placeholder<'_> {
    /// The placeholder as written, braces included.
    pub fn written(&self) -> String {
        let name = match self {
            Placeholder::Query => "query".to_owned(),
            Placeholder::MaxResults => "max_results".to_owned(),
            Placeholder::Record(f) => format!("record.{f}"),
            Placeholder::Secret(v) => format!("secret.{v}"),
            Placeholder::Item(p) | Placeholder::Unknown(p) => (*p).to_owned(),
        };
        format!("{{{{{name}}}}}")
    }
}

/// One piece of a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    Placeholder(Placeholder<'a>),
}

/// A template whose placeholder opens with `{{` and never closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unclosed;

impl std::fmt::Display for Unclosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a placeholder opens with {{ and never closes with }}")
    }
}

impl std::error::Error for Unclosed {}

/// The pieces of `template`, in order, as far as it reads (an unclosed
/// placeholder ends it with [`Unclosed`]).
fn scan(template: &str) -> impl Iterator<Item = Result<Piece<'_>, Unclosed>> {
    let mut rest = Some(template);
    let mut placeholder: Option<Placeholder<'_>> = None;
    std::iter::from_fn(move || {
        if let Some(p) = placeholder.take() {
            return Some(Ok(Piece::Placeholder(p)));
        }
        let text = rest?;
        let Some(start) = text.find("{{") else {
            rest = None;
            return (!text.is_empty()).then_some(Ok(Piece::Text(text)));
        };
        let after = &text[start + 2..];
        let Some(end) = after.find("}}") else {
            rest = None;
            return Some(Err(Unclosed));
        };
        let read = Placeholder::read(after[..end].trim());
        rest = Some(&after[end + 2..]);
        if start == 0 {
            Some(Ok(Piece::Placeholder(read)))
        } else {
            placeholder = Some(read);
            Some(Ok(Piece::Text(&text[..start])))
        }
    })
}

/// The pieces of `template`, in order.
pub fn pieces(template: &str) -> Result<Vec<Piece<'_>>, Unclosed> {
    scan(template).collect()
}

/// The `{{secret.NAME}}` names a template uses, in order, once each.
pub fn secret_names(template: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for piece in scan(template).map_while(Result::ok) {
        if let Piece::Placeholder(Placeholder::Secret(name)) = piece {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_reads_as_text_and_named_placeholders() {
        assert_eq!(
            pieces("q={{ query }}&n={{max_results}}&c={{record.city}}&k={{secret.K}}{{x}}{{$.a}}")
                .unwrap(),
            vec![
                Piece::Text("q="),
                Piece::Placeholder(Placeholder::Query),
                Piece::Text("&n="),
                Piece::Placeholder(Placeholder::MaxResults),
                Piece::Text("&c="),
                Piece::Placeholder(Placeholder::Record("city")),
                Piece::Text("&k="),
                Piece::Placeholder(Placeholder::Secret("K")),
                Piece::Placeholder(Placeholder::Unknown("x")),
                Piece::Placeholder(Placeholder::Item("$.a")),
            ]
        );
        assert_eq!(pieces("plain").unwrap(), vec![Piece::Text("plain")]);
        assert_eq!(Placeholder::Record("city").written(), "{{record.city}}");
        assert_eq!(pieces("a {{query").unwrap_err(), Unclosed);
        for odd in ["record.", "secret.", "", "querry"] {
            assert_eq!(Placeholder::read(odd), Placeholder::Unknown(odd));
        }
    }

    #[test]
    fn secrets_are_listed_once_in_order() {
        assert_eq!(
            secret_names("{{secret.A}} {{query}} {{ secret.B }} {{secret.A}} {{secret.C"),
            vec!["A".to_owned(), "B".to_owned()]
        );
    }
}
