from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'report.html.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_csp = resolve('csp')
    l_0_a = resolve('a')
    l_0_v = resolve('v')
    l_0_css = resolve('css')
    l_0_version = resolve('version')
    l_0_evidence = resolve('evidence')
    l_0_timeline = resolve('timeline')
    l_0_hang = resolve('hang')
    l_0_stacks = resolve('stacks')
    l_0_cores = resolve('cores')
    l_0_data = resolve('data')
    l_0_js = resolve('js')
    try:
        t_1 = environment.filters['length']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'length' found.")
    try:
        t_2 = environment.filters['tojson']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'tojson' found.")
    pass
    yield '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" content="'
    yield escape(environment.finalize((undefined(name='csp') if l_0_csp is missing else l_0_csp)))
    yield '">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta name="referrer" content="no-referrer">\n<meta name="color-scheme" content="light dark">\n<title>postmortem · '
    yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='a') if l_0_a is missing else l_0_a), 'case'), 'name')))
    yield ' · '
    yield escape(environment.finalize(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'cause')))
    yield '</title>\n<style>'
    yield escape(environment.finalize((undefined(name='css') if l_0_css is missing else l_0_css)))
    yield '</style>\n</head>\n<body class="cat-'
    yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'category'), 'value')))
    yield '">\n<header class="top">\n  <div class="brand">postmortem <span class="muted">'
    yield escape(environment.finalize((undefined(name='version') if l_0_version is missing else l_0_version)))
    yield '</span></div>\n  <h1 class="bundle">'
    yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='a') if l_0_a is missing else l_0_a), 'case'), 'name')))
    yield '</h1>\n  <nav>\n    <a href="#verdict">Verdict</a>\n    <a href="#evidence">Evidence ('
    yield escape(environment.finalize(t_1((undefined(name='evidence') if l_0_evidence is missing else l_0_evidence))))
    yield ')</a>\n    <a href="#timeline">Timeline ('
    yield escape(environment.finalize(environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'event_count')))
    yield ')</a>\n'
    if (undefined(name='hang') if l_0_hang is missing else l_0_hang):
        pass
        yield '<a href="#hang">Collectives</a>'
    if ((environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'shown') or environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'folded')) or (undefined(name='cores') if l_0_cores is missing else l_0_cores)):
        pass
        yield '<a href="#stacks">Stacks</a>'
    yield '    <a href="#artifacts">Artifacts ('
    yield escape(environment.finalize(t_1(environment.getattr(environment.getattr((undefined(name='a') if l_0_a is missing else l_0_a), 'case'), 'artifacts'))))
    yield ')</a>\n  </nav>\n</header>\n<main>\n'
    template = environment.get_template('_verdict.html.j2', 'report.html.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    template = environment.get_template('_evidence.html.j2', 'report.html.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    if (undefined(name='hang') if l_0_hang is missing else l_0_hang):
        pass
        template = environment.get_template('_hang.html.j2', 'report.html.j2')
        gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
        try:
            for event in gen:
                yield event
        finally: gen.close()
    template = environment.get_template('_timeline.html.j2', 'report.html.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    if ((environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'shown') or environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'folded')) or (undefined(name='cores') if l_0_cores is missing else l_0_cores)):
        pass
        template = environment.get_template('_stacks.html.j2', 'report.html.j2')
        gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
        try:
            for event in gen:
                yield event
        finally: gen.close()
    template = environment.get_template('_artifacts.html.j2', 'report.html.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    yield '</main>\n<footer class="muted">\n  Signature <code>'
    yield escape(environment.finalize(environment.getattr((undefined(name='v') if l_0_v is missing else l_0_v), 'signature')))
    yield '</code> · schema '
    yield escape(environment.finalize(environment.getattr((undefined(name='data') if l_0_data is missing else l_0_data), 'schema')))
    yield ' · generated offline; this file makes no network request.\n</footer>\n<script type="application/json" id="pm-verdict">'
    yield escape(environment.finalize(t_2((undefined(name='data') if l_0_data is missing else l_0_data))))
    yield '</script>\n<script>'
    yield escape(environment.finalize((undefined(name='js') if l_0_js is missing else l_0_js)))
    yield '</script>\n</body>\n</html>'

blocks = {}
debug_info = '5=36&9=38&10=42&12=44&14=46&15=48&18=50&19=52&20=54&21=57&22=61&26=63&27=69&28=75&29=83&30=89&31=97&34=104&36=108&37=110'