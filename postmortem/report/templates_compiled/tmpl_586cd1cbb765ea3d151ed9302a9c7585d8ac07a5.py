from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = '_evidence.html.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_evidence = resolve('evidence')
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    try:
        t_2 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
    pass
    yield '<section id="evidence" class="card" aria-labelledby="evidence-title">\n  <h2 id="evidence-title">Evidence</h2>\n'
    if (not (undefined(name='evidence') if l_0_evidence is missing else l_0_evidence)):
        pass
        yield '  <p class="muted">No line is cited: the verdict rests on no single piece of evidence.</p>\n'
    for l_1_item in (undefined(name='evidence') if l_0_evidence is missing else l_0_evidence):
        l_1_cores = resolve('cores')
        _loop_vars = {}
        pass
        yield '  <article id="'
        yield escape(environment.finalize(environment.getattr(l_1_item, 'anchor')))
        yield '" class="evidence '
        yield escape(environment.finalize(('root' if (environment.getattr(l_1_item, 'why') == 'root') else 'symptom')))
        yield '">\n    <header>\n      <span class="num">['
        yield escape(environment.finalize(environment.getattr(l_1_item, 'number')))
        yield ']</span>\n      <span class="why">'
        yield escape(environment.finalize(environment.getattr(l_1_item, 'why')))
        yield '</span>\n'
        if environment.getattr(l_1_item, 'artifact_anchor'):
            pass
            yield '<a href="#'
            yield escape(environment.finalize(environment.getattr(l_1_item, 'artifact_anchor')))
            yield '" class="where">'
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_item, 'ref'), 'path')))
            yield '</a>'
        else:
            pass
            yield '<span class="where">'
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_item, 'ref'), 'path')))
            yield '</span>'
        if (not t_2(environment.getattr(environment.getattr(l_1_item, 'ref'), 'line'))):
            pass
            yield '<span class="muted">line '
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_item, 'ref'), 'line')))
            yield '</span>'
        elif (not t_2(environment.getattr(environment.getattr(l_1_item, 'ref'), 'offset'))):
            pass
            yield '<span class="muted">byte offset '
            yield escape(environment.finalize(t_1('%#x', environment.getattr(environment.getattr(l_1_item, 'ref'), 'offset'))))
            yield '</span>'
        if environment.getattr(l_1_item, 'row'):
            pass
            yield '<a href="#'
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_item, 'row'), 'anchor')))
            yield '" class="jump">timeline row '
            yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_item, 'row'), 'number')))
            yield ' ↓</a>'
        yield '    </header>\n'
        if ((t_2(environment.getattr(environment.getattr(l_1_item, 'ref'), 'line')) and (not t_2(environment.getattr(environment.getattr(l_1_item, 'ref'), 'offset')))) and (undefined(name='cores') if l_1_cores is missing else l_1_cores)):
            pass
            yield '<p class="muted">Decoded from binary data at this offset; the core facts are under <a href="#stacks">Stacks</a>.</p>'
        if environment.getattr(l_1_item, 'lines'):
            pass
            yield '    <div class="context">\n'
            for (l_2_number, l_2_text, l_2_cited) in environment.getattr(l_1_item, 'lines'):
                _loop_vars = {}
                pass
                yield '      <div class="ln'
                yield escape(environment.finalize((' cited' if l_2_cited else cond_expr_undefined("the inline if-expression on line 19 in '_evidence.html.j2' evaluated to false and no else section was defined."))))
                yield '"><span class="no">'
                yield escape(environment.finalize((l_2_number if l_2_number else '')))
                yield '</span><code>'
                yield escape(environment.finalize(l_2_text))
                yield '</code></div>\n'
            l_2_number = l_2_text = l_2_cited = missing
            yield '    </div>\n'
        yield '  </article>\n'
    l_1_item = l_1_cores = missing
    yield '</section>'

blocks = {}
debug_info = '3=25&6=28&7=33&9=37&10=39&11=41&12=53&13=63&15=71&16=74&18=77&19=81'